# A thin index over hack/. Each target's work is in the script it names.
.PHONY: all build test verify bench chaos run run-detached down image plugin push release-check clean

all: build

build: ## Build the CCM and the pinned control-plane binaries into _output/bin
	hack/build.sh

test: ## Unit and integration tests against the real control plane
	hack/test.sh

verify: ## gofmt, go vet and hack/verify.d/* (linters, generated files)
	hack/verify.sh

bench: ## Benchmarks against the real control plane (docs/performance.md)
	hack/bench.sh

chaos: ## Fault-injection suite (docs/reliability.md)
	hack/chaos.sh

run: ## A local control plane, the CCM and a few nodes, until Ctrl-C (as root: REAL_NODES=1, L2=1)
	hack/local-up.sh

run-detached: ## As run, but returns; stop with `make down`
	hack/local-up.sh --detach

down: ## Stop a detached local cluster
	hack/local-down.sh

image: ## The release image (linux/amd64, linux/arm64; both binaries) as an OCI layout in _output/image
	hack/image.sh

plugin: ## The kubectl plugin (kubectl metal-ccm status) for linux/amd64 and linux/arm64 in _output/plugin
	hack/plugin.sh

push: ## Push the image to IMAGE:VERSION and the chart to oci://IMAGE's parent/charts (IMAGE=REGISTRY/REPO)
	IMAGE=$(IMAGE) hack/push.sh

release-check: ## What the release workflow does for a tag, without pushing (versions, changelog, image, chart)
	hack/release-check.sh

clean:
	rm -rf _output
