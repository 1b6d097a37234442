#!/usr/bin/env bash
# End to end with a real Prometheus: a shedding `spillway run --metrics-addr` on loopback,
# scraped by Prometheus (Debian's package) with the shipped dashboards/prometheus.yml and
# alert rules. Every dashboard expression must return data from it, the final counters it
# scraped must equal the run's summary, and promtool must accept the exposition, the rules
# and the rules' unit tests. Anything that cannot start fails the check; nothing skips.
# Needs prometheus, promtool, curl and jq on PATH (.ci/run installs them). ~30 s.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "prometheus_e2e: FAIL: $*" >&2; exit 1; }
for tool in prometheus promtool curl jq; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (apt-get install -y prometheus curl jq)"
done
bin=${SPILLWAY:-target/debug/spillway}
if [ -z "${SPILLWAY:-}" ]; then cargo build --quiet --bin spillway; fi
[ -x "$bin" ] || fail "no spillway binary at $bin"

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# A free loopback port at or above $1.
free_port() {
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}
sp=$(free_port $((20000 + RANDOM % 10000)))
pp=$(free_port $((sp + 1)))

echo "== spillway on 127.0.0.1:$sp (workloads/monitoring.yaml, 14 s at wall speed)"
"$bin" run workloads/monitoring.yaml --duration 14s --speed 1 --quiet \
  --metrics-addr "127.0.0.1:$sp" --metrics-linger 120s >"$tmp/spillway.out" 2>"$tmp/spillway.err" &
spillway_pid=$!
pids+=("$spillway_pid")

echo "== prometheus on 127.0.0.1:$pp, scraping with the shipped config"
cp dashboards/alerts.yml "$tmp/alerts.yml"
sed "s/127.0.0.1:9464/127.0.0.1:$sp/" dashboards/prometheus.yml >"$tmp/prometheus.yml"
grep -q "127.0.0.1:$sp" "$tmp/prometheus.yml" || fail "the shipped prometheus.yml does not scrape 127.0.0.1:9464"
promtool check config "$tmp/prometheus.yml"
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
  --web.listen-address="127.0.0.1:$pp" >"$tmp/prometheus.log" 2>&1 &
prom_pid=$!
pids+=("$prom_pid")
api="http://127.0.0.1:$pp"
for _ in $(seq 1 60); do
  curl -sf "$api/-/ready" >/dev/null && break
  kill -0 "$prom_pid" 2>/dev/null || { cat "$tmp/prometheus.log" >&2; fail "prometheus exited"; }
  sleep 0.5
done
curl -sf "$api/-/ready" >/dev/null || { tail -20 "$tmp/prometheus.log" >&2; fail "prometheus not ready after 30 s"; }

# Instant query; prints the result array (JSON).
query() {
  local out
  out=$(curl -sfG "$api/api/v1/query" --data-urlencode "query=$1") || fail "query failed: $1"
  [ "$(jq -r .status <<<"$out")" = success ] || fail "query error: $1: $out"
  jq -c .data.result <<<"$out"
}
# The single value of a query (first series).
value() { query "$1" | jq -r '.[0].value[1] // "none"'; }

echo "== promtool check metrics on a live scrape"
for _ in $(seq 1 40); do
  [ "$(curl -sf "http://127.0.0.1:$sp/metrics" | grep -c '^spillway_control_ticks_total')" = 1 ] && break
  sleep 0.5
done
curl -sf "http://127.0.0.1:$sp/metrics" >"$tmp/scrape.txt" || fail "cannot scrape spillway's /metrics"
promtool check metrics <"$tmp/scrape.txt" || fail "promtool check metrics found problems"

echo "== waiting for Prometheus to scrape the end of the run"
for _ in $(seq 1 120); do
  [ "$(value 'max(spillway_run_ended)')" = 1 ] && break
  kill -0 "$spillway_pid" 2>/dev/null || { cat "$tmp/spillway.err" >&2; fail "spillway exited before its linger"; }
  sleep 0.5
done
[ "$(value 'max(spillway_run_ended)')" = 1 ] || fail "Prometheus never saw the run end"
sleep 2  # one more scrape of the final figures

echo "== every dashboard expression returns data"
n=0
while IFS= read -r expr; do
  q=${expr//'$query'/.+}
  q=${q//'$__rate_interval'/15s}
  [ "$(query "$q" | jq length)" -gt 0 ] || fail "dashboard expression returns no data: $expr"
  n=$((n + 1))
done < <(jq -r '.panels[].targets[].expr' dashboards/grafana/spillway.json)
while IFS= read -r def; do
  metric=$(sed -E 's/^label_values\(([a-z_]+), *([a-z_]+)\)$/\1/' <<<"$def")
  label=$(sed -E 's/^label_values\(([a-z_]+), *([a-z_]+)\)$/\2/' <<<"$def")
  [ "$(query "$metric" | jq "[.[].metric.$label] | unique | length")" -ge 2 ] \
    || fail "template variable $def has no values"
  n=$((n + 1))
done < <(jq -r '.templating.list[] | select(.type == "query") | .definition' dashboards/grafana/spillway.json)
echo "   $n expressions, all with data"

echo "== plausible values, and the last scrape equals the run's summary"
summary_ingested=$(sed -nE 's/.*stream readings: ingested ([0-9]+).*/\1/p' "$tmp/spillway.err")
[ -n "$summary_ingested" ] || { cat "$tmp/spillway.err" >&2; fail "no summary from spillway"; }
scraped=$(value 'spillway_stream_ingested_tuples_total{stream="readings"}')
[ "$scraped" = "$summary_ingested" ] || fail "ingested: Prometheus has $scraped, the summary $summary_ingested"
for q in per_sensor hot; do
  line=$(grep -E "query $q: processed" "$tmp/spillway.err")
  processed=$(sed -E 's/.*processed ([0-9]+) of.*/\1/' <<<"$line")
  results=$(sed -E 's/.*results ([0-9]+),.*/\1/' <<<"$line")
  [ "$(value "spillway_query_processed_tuples_total{query=\"$q\"}")" = "$processed" ] || fail "$q processed differs"
  [ "$(value "spillway_query_results_total{query=\"$q\"}")" = "$results" ] || fail "$q results differ"
done
shed=$(value 'sum(spillway_query_shed_tuples_total)')
awk -v s="$shed" 'BEGIN { exit !(s > 0) }' || fail "nothing shed in an overload run ($shed)"
[ "$(value 'sum(abs(spillway_query_ledger_gap_tuples))')" = 0 ] || fail "the ledger does not balance"
[ "$(value 'spillway_ledger_violations_total')" = 0 ] || fail "ledger violations"
[ "$(value 'max_over_time(spillway_engine_shedding[5m])')" = 1 ] || fail "never shedding"
demand=$(value 'max_over_time(spillway_engine_demand_ratio[5m])')
awk -v d="$demand" 'BEGIN { exit !(d > 1.5 && d < 10) }' || fail "peak demand $demand, expected about 2.5"
p99=$(value 'histogram_quantile(0.99, sum by (le) (increase(spillway_query_latency_seconds_bucket{query="hot"}[5m])))')
awk -v p="$p99" 'BEGIN { exit !(p > 0 && p < 1) }' || fail "hot p99 $p99 s, expected under 1 s"
[ "$(query 'spillway_build_info' | jq -r '.[0].metric.policy')" = random ] || fail "build_info has no policy"
echo "   ingested $scraped = summary; shed $shed; peak demand $demand; hot p99 $p99 s"

echo "== alert rules: loaded and healthy in Prometheus, promtool check and unit tests"
rules=$(curl -sf "$api/api/v1/rules")
[ "$(jq '[.data.groups[].rules[]] | length' <<<"$rules")" -ge 3 ] || fail "rules not loaded: $rules"
[ "$(jq '[.data.groups[].rules[] | select(.health != "ok")] | length' <<<"$rules")" = 0 ] \
  || fail "unhealthy rules: $rules"
promtool check rules dashboards/alerts.yml
(cd tests && promtool test rules alerts_test.yml)

echo "== spillway ends its linger on Ctrl-C and exits 0"
kill -INT "$spillway_pid"
status=0
wait "$spillway_pid" || status=$?
[ "$status" = 0 ] || { cat "$tmp/spillway.err" >&2; fail "spillway exited with $status"; }
echo "prometheus_e2e: ok"
