// Package model is the react Triton backend's model, without cgo: it reads
// a react model's configuration (ParseConfig), loads its components file
// into a control.Profile with a W_p cache shared by the model's instances
// (Load), and corrects a batch of requests (Model.Execute), grouping the
// requests that share a preference so that each group is corrected with one
// application of its W_p.
//
// Package backend (the c-shared library) only translates between Triton's C
// API and this package; everything that can be tested without a server
// lives here.
package model
