# A thin index over hack/. Each target's work is in the script it names.
.PHONY: all build test run run-detached down clean

all: build

build: ## Build the CCM and the pinned control-plane binaries into _output/bin
	hack/build.sh

test: ## Unit and integration tests against the real control plane
	hack/test.sh

run: ## A local control plane, the CCM and a few nodes, until Ctrl-C
	hack/local-up.sh

run-detached: ## As run, but returns; stop with `make down`
	hack/local-up.sh --detach

down: ## Stop a detached local cluster
	hack/local-down.sh

clean:
	rm -rf _output
