//go:build e2e

// Package e2e is sparkgate's end-to-end suite: real Spark drivers (3.5 and
// 4.0 from pyspark), a real History Server, a real OpenID Connect provider
// (oidc-provider on Node.js), headless Chromium and the gateway binary, all on
// 127.0.0.1. Run scripts/setup.sh once, then
//
//	go test -tags e2e ./e2e/ -v -timeout 40m
//
// The harness lives in the non-test files (processes, crawler, browser); the
// tests in *_test.go. Nothing here mocks Spark.
package e2e
