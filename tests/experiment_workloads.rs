//! The five reference experiments (workloads/aurora-semantic, bursty, aggregates-error,
//! fairness, window-aware), simulated at reduced length with the policies of their own
//! `experiment:` blocks, each asserting what its opening comment says it demonstrates.

use std::path::Path;

use spillway::experiment::figures::Row;
use spillway::experiment::{self, NamedPolicy, Outcome, Setup};
use spillway::spec::{Policy, load_file, load_policy, parse_policy};

/// The workload's own `experiment:` policies, resolved as the command resolves them.
fn run(file: &str, seconds: i64, repeat: u32) -> Outcome {
    let w = load_file(file).unwrap();
    let block = w.experiment.as_ref().expect("an experiment: block");
    let policies = block
        .policies
        .iter()
        .map(|name| {
            let policy = if name.ends_with(".yaml") {
                load_policy(Path::new(file).parent().unwrap().join(name)).unwrap()
            } else if name == "none" {
                Policy::none()
            } else {
                parse_policy(&format!("kind: {name}\n"), name).unwrap()
            };
            let label = Path::new(name).file_stem().unwrap().to_string_lossy();
            NamedPolicy {
                label: label.into_owned(),
                policy,
            }
        })
        .collect();
    let setup = Setup {
        policies,
        repeat,
        seed: w.seed,
        live: false,
        duration: Some(seconds * 1_000_000_000),
    };
    experiment::run(&w, &setup, &mut |_| {}).unwrap()
}

fn get(o: &Outcome, policy: &str, query: &str, metric: &str) -> f64 {
    // Mean over repeats.
    let rows: Vec<&Row> = o
        .rows
        .iter()
        .filter(|r| r.policy == policy && r.query == query)
        .collect();
    assert!(!rows.is_empty(), "no row {policy}/{query}");
    rows.iter().map(|r| r.get(metric)).sum::<f64>() / rows.len() as f64
}

fn holds(o: &Outcome, policy: &str) -> bool {
    get(o, policy, "all", "holds_target") == 1.0
}

#[test]
fn aurora_semantic_keeps_the_valuable_fifth() {
    let o = run("workloads/aurora-semantic.yaml", 4, 1);
    assert!(!holds(&o, "none"));
    assert!(holds(&o, "random") && holds(&o, "semantic"));
    let sem = get(&o, "semantic", "all", "weighted_utility");
    let rnd = get(&o, "random", "all", "weighted_utility");
    let opt = get(&o, "optimum", "all", "weighted_utility");
    assert!(sem >= 1.3 * rnd, "semantic {sem} vs random {rnd}");
    assert!(sem >= 0.9 * opt, "semantic {sem} vs optimum {opt}");
    // Both shed about half: the difference is which tuples.
    for p in ["random", "semantic"] {
        let shed = get(&o, p, "alarms", "shed_share");
        assert!((0.4..0.65).contains(&shed), "{p} shed {shed}");
    }
}

#[test]
fn bursty_sheds_in_bursts_and_tail_drop_does_not_hold_latency() {
    let o = run("workloads/bursty.yaml", 6, 1);
    assert!(!holds(&o, "none"));
    assert!(!holds(&o, "tail-drop"));
    let tail = get(&o, "tail-drop", "slow_clicks", "latency_p99_ms");
    for p in ["random", "random-no-feedback"] {
        let p99 = get(&o, p, "slow_clicks", "latency_p99_ms");
        assert!(p99 < 0.5 * tail, "{p} p99 {p99} ms vs tail-drop {tail} ms");
        assert!(get(&o, p, "all", "over_target_share") <= 0.2, "{p}");
        // The keep fraction follows the bursts: shedding in them, none in the calm.
        let keep: Vec<f64> = o
            .traces
            .iter()
            .find(|t| t.policy == p)
            .unwrap()
            .ticks
            .iter()
            .filter(|t| t.query == 0)
            .map(|t| t.keep)
            .collect();
        let low = keep.iter().filter(|k| **k < 0.7).count();
        let full = keep.iter().filter(|k| **k >= 0.999).count();
        assert!(low >= 5 && full >= 10, "{p}: keep {keep:?}");
    }
    // Tail-drop loses to full queues, the shedders by their own drop points.
    assert!(get(&o, "tail-drop", "per_region", "queue_full_share") > 0.1);
    assert_eq!(get(&o, "random", "per_region", "queue_full_share"), 0.0);
}

#[test]
fn aggregates_error_intervals_cover_and_window_aware_is_exact() {
    let o = run("workloads/aggregates-error.yaml", 5, 2);
    assert!(!holds(&o, "none"));
    assert!(holds(&o, "random") && holds(&o, "window-aware"));
    for q in ["per_region", "sliding"] {
        assert_eq!(get(&o, "random", q, "missing_rows"), 0.0, "{q}");
        let err = get(&o, "random", q, "rel_error_mean");
        assert!(err > 0.0 && err < 0.05, "{q}: error {err}");
        let cov = get(&o, "random", q, "ci_coverage");
        assert!((0.8..=1.0).contains(&cov), "{q}: coverage {cov}");
    }
    // Whole tumbling groups: exact where emitted, fewer emitted.
    assert_eq!(get(&o, "window-aware", "per_region", "rel_error_max"), 0.0);
    assert!(get(&o, "window-aware", "per_region", "missing_rows") > 0.0);
}

#[test]
fn fairness_puts_the_loss_on_the_light_query() {
    let o = run("workloads/fairness.yaml", 4, 1);
    assert!(!holds(&o, "none"));
    assert!(!holds(&o, "tail-drop"));
    assert!(holds(&o, "random"));
    let shed = |q| get(&o, "random", q, "shed_share");
    let (billing, alerts, dashboard) = (shed("billing"), shed("alerts"), shed("dashboard"));
    assert!(billing < 0.05, "billing (weight 4) shed {billing}");
    assert!(
        billing < alerts && alerts < dashboard,
        "{billing} {alerts} {dashboard}"
    );
    assert!(dashboard > 0.5, "dashboard (weight 1) shed {dashboard}");
    // Tail-drop's loss is whatever its full queues turn away, not a choice.
    assert!(get(&o, "tail-drop", "dashboard", "queue_full_share") > 0.3);
    assert_eq!(get(&o, "tail-drop", "all", "holds_target"), 0.0);
}

#[test]
fn window_aware_emits_fewer_windows_all_exact() {
    let o = run("workloads/window-aware.yaml", 4, 1);
    assert!(holds(&o, "random"));
    // At 2x from the start, the window open when the rule came in ([0, 1 s), which may
    // hold tuples admitted before it) keeps twice what the machine can take: it is
    // abandoned (withheld whole), not processed a second late. Before, it was kept whole:
    // 2 s of work, p99 1002 ms against 500, one second of four over target.
    assert!(holds(&o, "window-aware"));
    assert_eq!(
        get(&o, "window-aware", "per_page", "over_target_share"),
        0.0
    );
    let p99 = get(&o, "window-aware", "per_page", "latency_p99_ms");
    assert!(p99 < 100.0, "p99 {p99} ms");
    assert_eq!(get(&o, "random", "per_page", "missing_rows"), 0.0);
    assert!(get(&o, "random", "per_page", "rel_error_mean") > 0.0);
    assert_eq!(get(&o, "window-aware", "per_page", "rel_error_max"), 0.0);
    let missing = get(&o, "window-aware", "per_page", "missing_rows");
    let exact = get(&o, "exact", "per_page", "exact_rows");
    assert!(
        missing > 0.2 * exact && missing < exact,
        "{missing} of {exact}"
    );
}
