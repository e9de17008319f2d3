package pipeline

import "github.com/mergectl/react-triton/triton"

// checkSignature records, as problems at the model's name, every
// difference between the signature a controllable model serves and that of
// the Triton model of the same name it shadows: clients that change only
// the address must see the same model.
func (b *builder) checkSignature(path string, m *Model, shadow *tritonModel) {
	served := triton.SignatureOf(m.metadata, m.config)
	for _, d := range served.Differences(triton.SignatureOf(shadow.Metadata, shadow.Config), m.name) {
		b.problem(path+".name", false, "%s (rename inputs and outputs to match, or set signature: differs if the change is intended)", d)
	}
}
