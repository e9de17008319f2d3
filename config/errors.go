package config

import "github.com/mergectl/react-triton/problem"

// The problems of a configuration are a problem.List of *problem.Problem:
// LoadCalibrate and Calibrate.Validate return one (LoadCalibrate's wrapped
// with the file's name), as the sidecar's Load does (sidecar/config), so
// that callers can list them one by one:
//
//	var l problem.List
//	if errors.As(err, &l) {
//		for _, p := range l { ... }
//	}

// fieldError returns a problem with the value at path.
func fieldError(path, msg string) *problem.Problem {
	return &problem.Problem{Path: path, Msg: msg}
}
