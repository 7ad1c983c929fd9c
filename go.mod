module github.com/gorperf/gorperf

go 1.26
