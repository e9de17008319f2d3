package evaluate

import (
	"fmt"
	"math"
)

// Accuracy returns the share of rows of logits (n×classes, row-major) whose
// largest entry is at the row's label. A tie goes to the lowest class, as
// numpy's argmax does. A NaN logit is an error: it would make the argmax
// meaningless.
func Accuracy(logits []float32, classes int, labels []int64) (float64, error) {
	n := len(labels)
	if classes <= 0 {
		return 0, fmt.Errorf("accuracy: %d classes: want at least 1", classes)
	}
	if len(logits) != n*classes {
		return 0, fmt.Errorf("accuracy: %d logits for %d labels of %d classes: want %d", len(logits), n, classes, n*classes)
	}
	if n == 0 {
		return 0, fmt.Errorf("accuracy: no samples")
	}
	right := 0
	for i, y := range labels {
		if y < 0 || y >= int64(classes) {
			return 0, fmt.Errorf("accuracy: sample %d: label %d outside [0, %d)", i, y, classes)
		}
		row := logits[i*classes : (i+1)*classes]
		best := 0
		for c, v := range row {
			if math.IsNaN(float64(v)) {
				return 0, fmt.Errorf("accuracy: sample %d: logit %d is NaN", i, c)
			}
			if v > row[best] {
				best = c
			}
		}
		if int64(best) == y {
			right++
		}
	}
	return float64(right) / float64(n), nil
}
