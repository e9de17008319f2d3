package pipeline

import (
	"math"

	"github.com/mergectl/react-triton/triton"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// Prediction is what one head predicted for each row of a request: the
// top-1 class (the index of the largest logit) and its confidence (the
// largest softmax probability). It lets a team compare what an
// experiment's arms do to predictions before any label arrives.
type Prediction struct {
	// Task is the head's task.
	Task string
	// Output is the output it was read from, under the name the client
	// sees; Classes its number of classes (the logits' last dimension).
	Output  string
	Classes int
	// Class and Confidence hold one entry per row.
	Class      []int
	Confidence []float64
}

// predictions computes each head's Prediction from the first floating-point
// output of that head in the response, taken as logits: a tensor whose last
// dimension holds the classes. Heads whose outputs the client did not ask
// for, or that are not floating-point, are left out. outs says which head
// output each prediction was taken from.
func (m *Model) predictions(resp *tritonpb.ModelInferResponse) (preds []Prediction, outs []output) {
	done := make([]bool, len(m.heads))
	raw := resp.GetRawOutputContents()
	for i, o := range resp.GetOutputs() {
		loc, ok := m.outputs[o.GetName()]
		if !ok || done[loc.head] || i >= len(raw) {
			continue
		}
		shape := o.GetShape()
		if len(shape) == 0 || shape[len(shape)-1] < 1 {
			continue
		}
		logits, err := triton.DecodeFloat32(nil, o.GetDatatype(), raw[i])
		if err != nil {
			continue // not a floating-point output
		}
		done[loc.head] = true
		p := top1(m.heads[loc.head].task, logits, int(shape[len(shape)-1]))
		p.Output = o.GetName()
		preds = append(preds, p)
		outs = append(outs, loc)
	}
	return preds, outs
}

// top1 returns the argmax and the largest softmax probability of each row
// of logits (rows of width classes), in float64.
func top1(task string, logits []float32, classes int) Prediction {
	rows := len(logits) / classes
	p := Prediction{Task: task, Classes: classes, Class: make([]int, rows), Confidence: make([]float64, rows)}
	for r := range rows {
		row := logits[r*classes : (r+1)*classes]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		top := float64(row[best])
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(float64(v) - top)
		}
		p.Class[r], p.Confidence[r] = best, 1/sum
	}
	return p
}
