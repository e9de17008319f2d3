package control

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/mergectl/react-triton/react"
	"github.com/mergectl/react-triton/react/componentsfile"
)

// LoadComponents reads and verifies a components file, and returns it with
// the SHA-256 of its bytes, the Checksum of a ProfileSpec. The components
// view the bytes read, which stay alive as long as they do.
func LoadComponents(path string) (*react.Components, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("reading components: %w", err)
	}
	c, err := componentsfile.Parse(data)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	sum := sha256.Sum256(data)
	return c, hex.EncodeToString(sum[:]), nil
}
