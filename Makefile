# oncecall — exactly-once tool calls for LLM agents.
# `make run` serves the callback locally; `make test` runs every test.

GO        ?= go
TABLE_NAME ?= oncecall
LAMBDA_FLAGS := CGO_ENABLED=0 GOOS=linux
LAMBDA_BUILD := -tags lambda.norpc -trimpath -ldflags="-s -w -buildid="

.PHONY: run test nonce build vet lint clean

## run: serve POST /callback and GET /functions on 127.0.0.1:3210 over an embedded store on 127.0.0.1:8000
run:
	$(GO) run ./cmd/oncecall

## test: every test, with the race detector
test:
	$(GO) test -race -count=1 ./...

## nonce: print a fresh X-Request-Nonce for the local hook key (or $HOOK_KEY)
nonce:
	@$(GO) run ./cmd/oncecall-admin nonce

## build: the Lambda bootstrap for arm64 in bin/
build:
	$(LAMBDA_FLAGS) GOARCH=arm64 $(GO) build $(LAMBDA_BUILD) -o bin/bootstrap ./functions/callback

vet:
	$(GO) vet ./...

## lint: golangci-lint with the committed .golangci.yml (fetched by the go command)
lint:
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0 run ./...

clean:
	rm -rf bin .aws-sam
