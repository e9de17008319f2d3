package control

import "context"

// clientKeyType is the context key of a request's client key.
type clientKeyType struct{}

// WithClientKey returns ctx carrying the key of the client a request comes
// from (a user id, or the peer's address), by which the cache limits the
// solves one client may start (CacheOptions.KeyRate).
func WithClientKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, clientKeyType{}, key)
}

// ClientKey returns the client key of ctx, "" when it has none (requests
// without a key share one).
func ClientKey(ctx context.Context) string {
	k, _ := ctx.Value(clientKeyType{}).(string)
	return k
}
