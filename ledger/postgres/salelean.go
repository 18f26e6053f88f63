package postgres

// leanWriteError is a write of the refund's lean path that failed; the
// refund is applied again on the careful path.
type leanWriteError struct{ err error }

func (e *leanWriteError) Error() string { return "lean write: " + e.err.Error() }
func (e *leanWriteError) Unwrap() error { return e.err }
