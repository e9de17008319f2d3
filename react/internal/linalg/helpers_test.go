package linalg_test

import "github.com/mergectl/react-triton/react/internal/mattest"

// relErr and assertClose compare matrices by the relative Frobenius error.
var (
	relErr      = mattest.RelErr
	assertClose = mattest.AssertClose
)
