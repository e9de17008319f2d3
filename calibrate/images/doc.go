// Package images turns folders of encoded images into a model's input
// tensor, for calibrate fit.
//
// A folder is read in a fixed order (List): every PNG or JPEG file under it,
// by extension (.png, .jpg, .jpeg, any case), in lexical order of their
// paths relative to it, subfolders included. Each file's header is checked
// up front; a file that is not a decodable image is either fatal or skipped
// and reported by name.
//
// A Preprocess turns one decoded image into one sample of float32 values
// (Preprocess.Tensor), in this order:
//
//  1. colour: grey images become one channel, colour ones their ITU-R
//     601-2 luma (0.299 R + 0.587 G + 0.114 B) for a grey model, or R, G, B
//     (or B, G, R) for a three-channel model; a grey image is repeated into
//     three channels. Transparent pixels are composited onto black. Values
//     are scaled to [0, 1]: an 8-bit value v becomes v/255, a 16-bit one
//     v/65535;
//  2. size: an image of another size is resized to the model's height and
//     width with a bilinear (triangle) filter whose support widens with the
//     downscaling factor, as Pillow's Image.resize(BILINEAR) does (computed
//     in float64, without Pillow's rounding to 8 bits between passes), or
//     refused (resize none);
//  3. normalisation: (x − mean_c) / std_c per channel, when mean and std are
//     given;
//  4. layout: channels first (CHW), channels last (HWC), or no channel axis
//     (HW, grey only).
//
// The values are computed in float64 and rounded to float32 once, so an
// 8-bit image without normalisation gives exactly float32(v)/255, the value
// numpy computes for x.astype(numpy.float32) / 255.
package images
