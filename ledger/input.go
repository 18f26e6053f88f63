package ledger

// Input is one request value as the caller sent it: absent (missing or JSON
// null), present but of the wrong shape, or present and well formed. Keeping
// the three apart lets a validation report each field's own message in the
// order the spec gives, whatever was wrong with the others.
type Input[T any] struct {
	Present bool // the caller sent a non-null value
	Bad     bool // the value was not of the field's type or range
	Value   T    // meaningful when Present && !Bad
}

// Some returns a present, well-formed input.
func Some[T any](v T) Input[T] { return Input[T]{Present: true, Value: v} }

// BadInput returns a present input of the wrong shape.
func BadInput[T any]() Input[T] { return Input[T]{Present: true, Bad: true} }

// OK reports whether the input is present and well formed.
func (in Input[T]) OK() bool { return in.Present && !in.Bad }

// Or returns the value when present and well formed, else def.
func (in Input[T]) Or(def T) T {
	if in.OK() {
		return in.Value
	}
	return def
}
