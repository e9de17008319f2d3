package control_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/react"
)

// exampleComponents accumulates small random statistics for two tasks.
func exampleComponents() *react.Components {
	rng := rand.New(rand.NewPCG(7, 7))
	c := &react.Components{D: 4, Beta: 0.1, Normalization: react.NormSum, Backbone: react.ModelRef{Name: "backbone", Output: "feature"}}
	for _, name := range []string{"cars", "dtd"} {
		acc := react.NewAccumulator(4)
		z := make([]float64, 4*32)
		for i := range z {
			z[i] = rng.NormFloat64()
		}
		if err := acc.AddFloat64(z, z); err != nil {
			panic(err)
		}
		st, err := acc.Stats(name, react.ModelRef{Name: "expert_" + name, Output: "feature"})
		if err != nil {
			panic(err)
		}
		c.Tasks = append(c.Tasks, st)
	}
	return c
}

func Example() {
	comps := exampleComponents()
	cache, _ := control.NewCache(128)
	profile, err := control.NewProfile(context.Background(), control.ProfileSpec{
		Name:       "zoo",
		Components: comps,
		Options:    react.DefaultOptions(comps),
		Default:    "cars=1,dtd=1",
		Presets:    map[string]string{"texture": "dtd=1"},
		Cache:      cache,
	})
	if err != nil {
		panic(err)
	}
	// What a request said: a preference header, and a preset parameter
	// that the header outranks.
	choice, err := profile.Resolve(control.Request{
		Header:    control.Values{Preference: "cars=3,dtd=1", HasPreference: true},
		Parameter: control.Values{Preset: "texture", HasPreset: true},
	})
	if err != nil {
		panic(err)
	}
	w, err := profile.Matrix(context.Background(), choice)
	if err != nil {
		panic(err)
	}
	fmt.Println(choice.Canonical(), "from the", choice.Source, "D =", w.D)

	// A request that says nothing gets the default.
	def, _ := profile.Resolve(control.Request{})
	fmt.Println(def.Canonical(), "from the", def.Source)

	// A mistake names the problem and the valid names.
	_, err = profile.Resolve(control.Request{Parameter: control.Values{Preset: "shiny", HasPreset: true}})
	fmt.Println(err)
	// Output:
	// cars=0.75,dtd=0.25 from the header D = 4
	// cars=0.5,dtd=0.5 from the default
	// react-preset parameter: unknown preset "shiny" (valid tasks: cars, dtd; presets: texture)
}
