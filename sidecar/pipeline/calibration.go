package pipeline

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mergectl/react-triton/control"
	"github.com/mergectl/react-triton/sidecar/config"
)

// checkCalibration checks that the model a controllable model corrects
// (the backbone r and its output) is the one its components file was
// calibrated on, as the file records it: a file calibrated on another
// backbone of the same D loads and serves, but corrects the wrong feature.
// A model known to be a variant of the recorded one (an FP16 copy, a
// re-export) is accepted when the configuration names the recorded model
// with variant_of; its output may then be named otherwise too. A file
// that records no backbone (fitted from .npy embeddings without
// --backbone-model) is not checked. When the file records the version too,
// served, the version of r that answers (r's own, or the one Triton
// chooses; "" when unknown), must be it: a new version of the backbone
// added to the repository would otherwise be corrected with the
// statistics of the old one.
//
// path is the configuration key of the corrected model, model the path of
// the configured model ("models[2]"). It returns the version every answer
// of the corrected model must come from (Model.calibrated): the recorded
// one, "" when none is recorded or the model is a declared variant.
func (b *builder) checkCalibration(path, model string, mc config.Model, prof *control.Profile, r ref, output, served string) string {
	cal := prof.Backbone()
	switch {
	case cal.Name == "":
	case mc.VariantOf != "":
		if cal.Name != mc.VariantOf {
			b.problem(model+".variant_of", false, "the components of %q were calibrated on model %q, not %q: name the model the file records",
				prof.Name(), cal.Name, mc.VariantOf)
		}
	case cal.Name != r.model || (cal.Output != "" && cal.Output != output):
		b.problem(path, false, "%s output %q would be corrected with the components of %q, calibrated on model %q output %q: "+
			"calibrate components on this model, or, if it is a variant of %q (an FP16 copy, a re-export), say so with variant_of: %s",
			describe(r), output, prof.Name(), cal.Name, cal.Output, cal.Name, cal.Name)
	case cal.Version != "" && served != "" && served != cal.Version:
		b.problem(path, false, "%s output %q: version %s answers, but the components of %q were calibrated on version %s: "+
			"pin version %s (the ensemble step's model_version, or the backbone's version), or calibrate components on version %s",
			describe(r), output, served, prof.Name(), cal.Version, cal.Version, served)
	}
	if cal.Name == "" || mc.VariantOf != "" {
		return ""
	}
	return cal.Version
}

// checkAnswerVersion refuses an answer of the corrected model r from a
// version other than the calibrated one (Model.calibrated): Triton may
// load a new version after start-up (a step with model_version -1, a
// backbone without a version, and model control in poll mode), whose
// feature the components file does not describe. INTERNAL, as Triton's
// answers that no longer match the load-time checks.
func (m *Model) checkAnswerVersion(what string, r ref, answered string) error {
	if m.calibrated == "" || answered == "" || answered == m.calibrated {
		return nil
	}
	return status.Errorf(codes.Internal, "model %q: %s %s answered from version %s, but the components of %q were calibrated on version %s: "+
		"pin version %s, or calibrate on version %s and reload the sidecar", m.name, what, describe(r), answered, m.profile.Name(), m.calibrated, m.calibrated, answered)
}
