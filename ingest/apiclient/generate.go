package apiclient

//go:generate go run ./internal/generate -o client.gen.go
