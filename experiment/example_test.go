package experiment_test

import (
	"fmt"
	"log"

	"github.com/mergectl/react-triton/experiment"
)

// A split assigns every key to one arm, the same on every replica.
func ExampleSplit_Assign() {
	arms, err := experiment.ParseArms("A=50,B=30,C=20")
	if err != nil {
		log.Fatal(err)
	}
	s, err := experiment.NewSplit("homepage", arms, 1)
	if err != nil {
		log.Fatal(err)
	}
	for _, key := range []string{"alice", "bob", "42"} {
		fmt.Println(key, arms[s.Assign(key)].Name)
	}
	// Output:
	// alice B
	// bob C
	// 42 A
}
