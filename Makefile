# Two commands on a fresh machine:
#   make demo   start local Redis nodes, run contending workers through the quorum lock, print what happened
#   make test   every test, with the race detector, against real redis-server processes
.PHONY: demo test deps bench chaos vet

deps:
	@scripts/ensure-deps.sh

demo: deps
	go run ./cmd/quorumlock demo

test: deps
	scripts/test.sh

vet:
	gofmt -l . && go vet ./...

bench: deps
	go test -run '^$$' -bench . -benchtime 3000x ./quorum/
