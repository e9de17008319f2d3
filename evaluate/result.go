package evaluate

// Result is what an evaluation measured.
type Result struct {
	Tasks   []string `json:"tasks"`
	Samples []int    `json:"samples"` // evaluation samples per task
	// Individual is each task's expert accuracy, the denominator of the
	// normalised accuracy.
	Individual []float64 `json:"individual"`
	Rows       []Row     `json:"rows"`
	// Sets and Backbones describe what was evaluated, for tables and
	// figures drawn from the result alone.
	Sets      []SetInfo      `json:"sets"`
	Backbones []BackboneInfo `json:"backbones"`
	Summaries []Summary      `json:"summaries"`
	// Served compares, with Config.Served, each task at each preference
	// as the sidecar serves it and as evaluated.
	Served []ServedCheck `json:"served,omitempty"`
	// Linear holds, with Config.Oracle, each backbone model's LinearFit
	// per task: how much of the experts' features a linear map can explain.
	Linear  []LinearFit `json:"linear,omitempty"`
	Timings Timings     `json:"timings"`
}

// Row is the accuracy of one model at one preference, on every task.
type Row struct {
	Backbone    string    `json:"backbone,omitempty"` // the Backbone's label; empty for individual
	Method      string    `json:"method"`             // individual, merged, react, naive, polar or oracle
	Beta        *float64  `json:"beta,omitempty"`     // of a correction
	Norm        string    `json:"normalize,omitempty"`
	Set         string    `json:"set,omitempty"`
	Label       string    `json:"label"`
	Preference  []float64 `json:"preference,omitempty"`
	Accuracy    []float64 `json:"accuracy"`
	Normalized  []float64 `json:"normalized"`
	Mean        float64   `json:"mean"`            // mean accuracy over the tasks
	NormMean    float64   `json:"normalized_mean"` // mean normalised accuracy
	Weighted    *float64  `json:"weighted,omitempty"`
	Cond        float64   `json:"cond,omitempty"` // estimated condition number of C_p (react)
	SetPosition int       `json:"-"`
}

// Summary is a preference set's hypervolume and uniformity for one model:
// over the set's focus tasks (@k: both tasks of a pairwise sweep, the three
// of a simplex set, every task otherwise) and over every task (@T). U is the
// mean over the set's points that weigh two or more of those tasks; nil
// when none does.
type Summary struct {
	Backbone string   `json:"backbone"`
	Method   string   `json:"method"`
	Beta     *float64 `json:"beta,omitempty"`
	Norm     string   `json:"normalize,omitempty"`
	Set      string   `json:"set"`
	Focus    []string `json:"focus"`
	Points   int      `json:"points"`
	HVk      float64  `json:"hv_k"`
	HVT      float64  `json:"hv_T"`
	Uk       *float64 `json:"u_k,omitempty"`
	UT       *float64 `json:"u_T,omitempty"`
	// Beats counts the points whose p-weighted accuracy exceeds the
	// uncorrected backbone's.
	Beats int `json:"beats_merged"`
}

// Timings are the wall-clock times of an evaluation's stages, in seconds.
type Timings struct {
	Features float64 `json:"features_s"` // extracting every backbone's and expert's features
	Heads    float64 `json:"heads_s"`    // running the heads on corrected features
	Solves   int     `json:"solves"`
	// SolveMean is the mean time of one W_p for a new preference (solve
	// and conversion to float32).
	SolveMean float64 `json:"solve_mean_s"`
	// CorrectPerSample is the mean time of Ẑ = Z W_pᵀ per sample, measured
	// over whole tasks.
	CorrectPerSample float64 `json:"correct_per_sample_s"`
	// Served is the time of the checks through the sidecar (Config.Served).
	Served float64 `json:"served_s,omitempty"`
}

// SetInfo describes a preference set of the evaluation.
type SetInfo struct {
	Name  string   `json:"name"`
	Kind  string   `json:"kind"`
	Focus []string `json:"focus"`
}

// BackboneInfo describes a components file of the evaluation.
type BackboneInfo struct {
	Label string `json:"label"`
	Model string `json:"model"` // the backbone model's name
	// Samples is the number of calibration samples over every task.
	Samples int64   `json:"calibration_samples"`
	Beta    float64 `json:"beta"` // the file's own β and normalisation
	Norm    string  `json:"normalize"`
}
