package pipeline

import (
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// repositoryIndex is Triton's repository index as one Build saw it: the
// names of every model in Triton's repositories, loaded or not.
type repositoryIndex struct {
	names map[string]bool
	err   error // the index could not be read
}

// inRepository reports whether Triton's repository has a model of that
// name, asking Triton for its index once per Build; ok is false when the
// index could not be read (then nothing is known). A model that is not
// ready but is in the repository may be loading, or be loaded later: worth
// waiting for. One that is not in the repository at all is a name Triton
// does not know, most likely mistyped, and no wait will bring it.
func (b *builder) inRepository(name string) (known, ok bool) {
	if b.index == nil {
		b.index = &repositoryIndex{names: map[string]bool{}}
		ctx, cancel := b.up.callCtx(b.ctx)
		defer cancel()
		resp, err := b.up.RPC.RepositoryIndex(ctx, &tritonpb.RepositoryIndexRequest{})
		b.index.err = err
		for _, m := range resp.GetModels() {
			b.index.names[m.GetName()] = true
		}
	}
	if b.index.err != nil {
		return false, false
	}
	return b.index.names[name], true
}
