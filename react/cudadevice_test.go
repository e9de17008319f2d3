package react_test

// The cuda backend, registered in a build with the cuda tag (without it
// the package is empty), so that TestMain's UseBackend and the device
// tests (device_test.go) have it, as a cuda binary does.
import _ "github.com/mergectl/react-triton/react/cudadevice"
