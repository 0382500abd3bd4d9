# Load-test experiment suite: Tomcat settings x kernel sysctls x load shapes.
#   make run-matrix [MATRIX=env/matrices/NAME.matrix] [KNOB=value ...]
#   make test
SHELL := /bin/bash
.DEFAULT_GOAL := help

MATRIX ?= env/matrices/default.matrix
TOOLS := .tools
K6 := $(TOOLS)/bin/k6
BATS := $(TOOLS)/bats/node_modules/bats/bin/bats
JAR := server/target/loadtest-target.jar
# A Spring Boot service the suite did not write, for the tests and the example of docs/own-service.md.
OWNAPP_JAR := tests/fixtures/ownapp/target/greeting-service.jar
OWNAPP_BOOT4_JAR := tests/fixtures/ownapp-boot4/target/greeting-service.jar
OWNAPP_BOOT2_JAR := tests/fixtures/ownapp-boot2/target/greeting-service.jar
CONFIGSERVER_JAR := tests/fixtures/configserver/target/config-server.jar
SECURED_JAR := tests/fixtures/ownapp-secured/target/secured-service.jar
EUREKA_JAR := tests/fixtures/eurekaserver/target/eureka-server.jar
SERVER_SOURCES := server/pom.xml $(shell find server/src -type f 2>/dev/null)
# $(call shq,VALUE): VALUE as one single-quoted shell word (a quote becomes
# '\''), so a value given on make's command line (MATRIX='x;id') reaches a
# script as that text, never as shell syntax.
shq = '$(subst ','\'',$(1))'

.PHONY: help tools run-tools packages report-tools chromium run-matrix advise report compare test test-unit test-integration lint clean-tools ownapp test-java

help: ## Show the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{ printf "  %-18s %s\n", $$1, $$2 }'

# The start archives of the target (class-data sharing, and an AOT cache with a JDK 25 or later).
CDS := server/target/start/app.jsa

tools: run-tools $(BATS) $(TOOLS)/bin/influxd ## Install or build everything a run and the tests need

run-tools: packages $(K6) $(JAR) $(CDS) report-tools ## Install or build only what a matrix run needs (report.html inlines uPlot)

packages:
	@scripts/setup/install-packages.sh

# uPlot (inlined into report.html) and playwright-core, pinned by scripts/report/package-lock.json.
report-tools:
	@scripts/setup/install-report-tools.sh

# The browser the report's test opens report.html in (Debian's chromium).
chromium:
	@scripts/setup/install-chromium.sh

$(K6): scripts/setup/install-k6.sh # rebuilt when the pin there changes
	@scripts/setup/install-k6.sh

$(BATS):
	@scripts/setup/install-bats.sh

$(JAR): $(SERVER_SOURCES)
	@scripts/setup/require.sh java mvn
	@echo "building the target (server/)" >&2
	mvn -q -B -Dstyle.color=never -f server/pom.xml package -DskipTests
	@touch $@
	@# Its checksum, for each run's manifest (manifest_inputs: 0.1 s a run less).
	@sha256sum $@ | cut -d' ' -f1 >$@.sha256

# example_jar JAR,DIR,SOURCES,WHAT: the rule that builds WHAT, an example
# application of tests/fixtures, with Maven from DIR/pom.xml, again when its
# pom or a file under SOURCES changes.
define example_jar
$(1): $(2)/pom.xml $$(shell find $(3) -type f 2>/dev/null)
	@scripts/setup/require.sh java mvn
	@echo "building $(4) ($(2)/)" >&2
	mvn -q -B -Dstyle.color=never -f $(2)/pom.xml package
	@touch $$@
endef

$(eval $(call example_jar,$(OWNAPP_JAR),tests/fixtures/ownapp,tests/fixtures/ownapp/src,the example service))
# The same service on Spring Boot 4 and on Spring Boot 2.7 (Tomcat 9): their poms read ownapp's sources.
$(eval $(call example_jar,$(OWNAPP_BOOT4_JAR),tests/fixtures/ownapp-boot4,tests/fixtures/ownapp/src,the example service on Spring Boot 4))
$(eval $(call example_jar,$(OWNAPP_BOOT2_JAR),tests/fixtures/ownapp-boot2,tests/fixtures/ownapp/src,the example service on Spring Boot 2.7))
# Applications nobody here wrote, from Maven Central, each started by a main of a few lines:
# Spring Cloud Config Server (Spring Boot 4, Tomcat 11) and Netflix Eureka Server (Spring Boot 3.5, Tomcat 10.1).
$(eval $(call example_jar,$(CONFIGSERVER_JAR),tests/fixtures/configserver,tests/fixtures/configserver/src,Spring Cloud Config Server))
$(eval $(call example_jar,$(EUREKA_JAR),tests/fixtures/eurekaserver,tests/fixtures/eurekaserver/src,Spring Cloud Netflix Eureka Server))
# A service whose actuator Spring Security guards (Spring Boot 4).
$(eval $(call example_jar,$(SECURED_JAR),tests/fixtures/ownapp-secured,tests/fixtures/ownapp-secured/src,the service with a guarded actuator))

ownapp: $(OWNAPP_JAR) $(OWNAPP_BOOT4_JAR) $(OWNAPP_BOOT2_JAR) $(CONFIGSERVER_JAR) $(EUREKA_JAR) $(SECURED_JAR) ## Build the example Spring Boot services of tests/fixtures (ownapp*; configserver, eurekaserver: applications from Maven Central the suite did not write)

$(CDS): $(JAR)
	@scripts/setup/build-target-start.sh

# Knobs given as KNOB=value on this command line reach the runner through
# the environment; it layers them over the matrix.
run-matrix: run-tools ## Run a matrix (MATRIX=env/matrices/NAME.matrix; RESUME=<run-id> to finish one), write results/<run-id>/
	@scripts/setup/require.sh root
	scripts/run-matrix.sh $(call shq,$(MATRIX))

# RUN=<run-id> (default: the latest run); the runner writes it at the end of every run.
report: report-tools ## Write results/<run-id>/report.html again (RUN=<run-id>, default the latest run)
	scripts/report.sh $(call shq,$(or $(RUN),latest))

# MATRIX is the load file here (a matrix without axes, plus the goal: docs/advise.md).
advise: run-tools ## From a load and a goal to verified settings (MATRIX=env/advise/NAME.env); writes results/advise-<id>/
	@scripts/setup/require.sh root
	scripts/advise.sh $(call shq,$(MATRIX))

# MATRIX is the load file (a matrix without axes, plus the goal: docs/capacity.md).
.PHONY: capacity
capacity: run-tools ## How much can it take: the highest load a setting holds within a goal (MATRIX=env/advise/NAME.env); writes results/capacity-<id>/
	@scripts/setup/require.sh root
	scripts/capacity.sh $(call shq,$(MATRIX))

compare: ## Compare two runs cell by cell (A=<run-id> B=<run-id> THRESHOLD_PCT=5); writes results/compare-<A>-vs-<B>/
	@test -n $(call shq,$(A)) -a -n $(call shq,$(B)) || { echo "make compare: give two runs: make compare A=<run-id> B=<run-id>" >&2; exit 2; }
	THRESHOLD_PCT=$(call shq,$(or $(THRESHOLD_PCT),5)) scripts/compare.sh $(call shq,$(A)) $(call shq,$(B))

# Read-only: reads the host's listener, sysctls, counters and limits for WINDOW; changes nothing.
.PHONY: doctor
doctor: ## Check this host's listener on PORT (8080) for the failures the suite reproduces, read-only (ACTUATOR=URL, WINDOW=10s, BEFORE=results/doctor-X: what changed since that reading); writes results/doctor-<id>/
	scripts/doctor.sh --port $(call shq,$(or $(PORT),8080)) --window $(call shq,$(or $(WINDOW),10s)) $(if $(ACTUATOR),--actuator $(call shq,$(ACTUATOR))) $(if $(BEFORE),--before $(call shq,$(BEFORE)))

.PHONY: sysctls
sysctls: ## Write env/defaults.env's kernel sections, scripts/ltsuite/sysctl_names.py and compose/target.yml's sysctls from the kernel knobs' table (env/sysctls.tsv)
	PYTHONPATH=scripts python3 -m ltsuite.sysctls defaults --write
	PYTHONPATH=scripts python3 -m ltsuite.sysctls names --write
	PYTHONPATH=scripts python3 -m ltsuite.sysctls compose --write

.PHONY: columns-doc
columns-doc: ## Write docs/columns.md from the columns' schema (scripts/ltsuite/columns.py)
	PYTHONPATH=scripts python3 -m ltsuite.columns --markdown >docs/columns.md.tmp
	mv docs/columns.md.tmp docs/columns.md

lint: packages ## shellcheck every script and test file
	shellcheck scripts/*.sh scripts/lib/*.sh scripts/setup/*.sh tests/*.bash tests/fixtures/exit-path/*.bash .ci/run
	shellcheck --shell=bash tests/unit/*.bats tests/integration/*.bats tests/fixtures/timeouts/*.bats

# Every test has a time limit, so a hang fails its test (named, with what was
# running) and the suite goes on: each bats test BATS_TEST_TIMEOUT seconds
# (bats' own; a file that needs more sets its own at its top), each file's
# setup_file LT_SETUP_FILE_TIMEOUT (tests/test_helper.bash), each pytest test
# PYTEST_TIMEOUT (pytest-timeout).
export BATS_TEST_TIMEOUT ?= 600
export LT_SETUP_FILE_TIMEOUT ?= 1800
PYTEST_TIMEOUT ?= 120

test: tools aws-tools chromium $(OWNAPP_JAR) $(OWNAPP_BOOT4_JAR) $(OWNAPP_BOOT2_JAR) $(CONFIGSERVER_JAR) $(EUREKA_JAR) $(SECURED_JAR) lint test-java test-python ## Java tests of the target, unit tests, then integration tests with real namespaces, target and k6
	$(BATS) --timing tests/unit tests/integration

# The jar is built without its tests (a matrix run after an edit stays quick);
# the tests run here, every time: unit tests and the app started on random
# loopback ports (about 40 s).
test-java: ## Only the target's Java tests (mvn test)
	@scripts/setup/require.sh java mvn
	mvn -q -B -Dstyle.color=never -f server/pom.xml test

.PHONY: test-python pytest
pytest: ## Install the pinned pytest into .tools/venv
	@scripts/setup/install-pytest.sh

# The data model (scripts/ltsuite) over recorded cells; -v names each test
# (.ci/run counts them).
test-python: pytest aws-tools ## Only the Python tests of the data model (tests/python, pytest)
	PYTHONPATH=scripts $(TOOLS)/venv/bin/python -m pytest -v -p no:cacheprovider --timeout=$(PYTEST_TIMEOUT) tests/python

test-unit: tools aws-tools ## Only the unit tests (no root needed)
	$(BATS) tests/unit

test-integration: tools aws-tools chromium $(OWNAPP_JAR) $(OWNAPP_BOOT4_JAR) $(OWNAPP_BOOT2_JAR) $(CONFIGSERVER_JAR) $(EUREKA_JAR) $(SECURED_JAR) ## Only the integration tests
	$(BATS) --timing tests/integration

clean-tools: ## Remove .tools/ (installed tools)
	rm -rf $(TOOLS)

# --- Monitoring: InfluxDB (+ Grafana with Docker) -------------------------------
.PHONY: up down monitoring-status compose-client
up: ## Start InfluxDB (+ Grafana): docker compose when a Docker engine has the images, native otherwise (MONITORING_STACK=native|compose chooses)
	scripts/monitoring.sh up

down: ## Stop what make up started
	scripts/monitoring.sh down

monitoring-status: ## Is InfluxDB up, and what runs it
	scripts/monitoring.sh status

compose-client: ## Install a compose client (Debian's docker-compose) to check or drive compose/
	@scripts/setup/install-compose.sh

$(TOOLS)/bin/influxd:
	@scripts/setup/install-influxd.sh

# --- Fan-out to k6 machines with AWS SSM -----------------------------------------
.PHONY: ssm-run operator-manifest aws-tools
ssm-run: $(K6) aws-tools ## Run one matrix cell on every tagged k6 instance via AWS SSM (DRY_RUN=1 prints only, CELL=N)
	scripts/ssm-fanout.sh $(if $(filter 1,$(DRY_RUN)),--dry-run) $(if $(CELL),--cell $(call shq,$(CELL))) $(call shq,$(MATRIX))

operator-manifest: $(K6) ## Print a k6-operator TestRun for one cell (PARALLELISM=N, CELL=N)
	@scripts/k6-operator.sh --parallelism $(call shq,$(or $(PARALLELISM),2)) $(if $(CELL),--cell $(call shq,$(CELL))) $(call shq,$(MATRIX))

aws-tools: ## Install the pinned AWS CLI and moto (fan-out and its tests) into .tools/venv
	@scripts/setup/install-aws-tools.sh

# --- Benchmarks ------------------------------------------------------------------
.PHONY: bench
bench: tools ## Measure the suite's own overhead; writes results/bench-<id>/
	scripts/bench.sh

.PHONY: tls-calibrate
tls-calibrate: tools ## The CPU per TLS handshake on this machine of Tomcat, k6 and nginx, per key type (TLS_KEY=ec rsa; docs/tls.md)
	@scripts/tls-calibrate.sh $(or $(TLS_KEY),ec rsa)

# --- Compose backend: the target in a container per cell (BACKEND=compose) ---------
.PHONY: docker-up docker-down compose-images
docker-up: ## Install Debian's Docker engine and docker-compose if missing; start dockerd (.data/docker) if no engine answers
	@scripts/setup/install-docker.sh start

docker-down: ## Stop the dockerd that docker-up started (by its pid), nothing else
	@scripts/setup/install-docker.sh stop

compose-images: $(JAR) docker-up ## Build the target image for BACKEND=compose (Debian base by debootstrap; no registry)
	@scripts/setup/build-images.sh
