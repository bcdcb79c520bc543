// Builds the test bed's OCI registry (main.go) on go-containerregistry's registry
// package of one pinned release: the chart tests push the packaged chart to it with
// `helm push` and pull it back with `nvcrectl setup init --chart-ref`.
module nvcre.local/hack/registry

go 1.26.0

require github.com/google/go-containerregistry v0.22.1
