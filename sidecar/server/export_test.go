package server

import "net"

// HTTPListener returns the HTTP listener, for the external tests.
func (s *Server) HTTPListener() net.Listener { return s.httpLis }

// GRPCListener returns the gRPC listener, for the external tests.
func (s *Server) GRPCListener() net.Listener { return s.grpcLis }
