//! The dashboard end to end: the real binary in a real terminal (tmux). It runs a workload
//! with `--tui`, presses `+` until the dashboard shows shedding, `s` to change policy,
//! then `q`, and checks the screen showed the queries and the shedding state, the run
//! exited 0 with its summary, and the terminal was given back (main screen, cursor shown,
//! cooked mode). Fails, never skips, when tmux cannot start.

use std::path::Path;
use std::process::Command;
use std::thread::sleep;
use std::time::Duration;

struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux must be installed (.ci/run installs it)")
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "e2e"]).stdout).into()
    }

    fn keys(&self, keys: &str) {
        self.cmd(&["send-keys", "-t", "e2e", keys]);
    }

    fn var(&self, name: &str) -> String {
        let out = self.cmd(&["display-message", "-p", "-t", "e2e", name]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Polls the screen until `pred` holds, for up to `secs`.
    fn wait_for(&self, secs: u64, pred: impl Fn(&str) -> bool) -> Option<String> {
        for _ in 0..secs * 5 {
            let s = self.screen();
            if pred(&s) {
                return Some(s);
            }
            sleep(Duration::from_millis(200));
        }
        None
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Only the server on this test's own socket.
        self.cmd(&["kill-server"]);
    }
}

#[test]
fn dashboard_shows_queries_sheds_on_plus_switches_policy_and_q_restores_the_terminal() {
    let bin = env!("CARGO_BIN_EXE_spillway");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workload = root.join("tests/fixtures/tui.yaml");
    let tmux = Tmux {
        socket: format!("spillway-tui-{}", std::process::id()),
    };
    // After the run: its exit code and whether the terminal is back in cooked mode.
    let script = format!(
        "{bin} run {} --tui > /dev/null; echo EXIT=$?; stty -a | tr ' ;' '\\n\\n' | grep -x -- '-\\?icanon'; sleep 120",
        workload.display()
    );
    let started = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "e2e",
        "-x",
        "120",
        "-y",
        "40",
        "sh",
        "-c",
        &script,
    ]);
    assert!(
        started.status.success(),
        "tmux could not start: {}",
        String::from_utf8_lossy(&started.stderr)
    );

    let first = tmux
        .wait_for(60, |s| {
            s.contains("queries") && s.contains("trend") && s.contains("hot")
        })
        .unwrap_or_else(|| panic!("the dashboard never showed the queries:\n{}", tmux.screen()));
    assert!(first.contains("tui-e2e"), "{first}");
    assert!(
        first.contains("drop points") && first.contains("events"),
        "{first}"
    );
    assert_eq!(
        tmux.var("#{alternate_on}"),
        "1",
        "the dashboard uses the alternate screen"
    );

    // `+` until the shedder is at work (each press: every source x1.25).
    let mut shedding = None;
    for _ in 0..40 {
        tmux.keys("+");
        if let Some(s) = tmux.wait_for(1, |s| s.contains("SHEDDING")) {
            shedding = Some(s);
            break;
        }
    }
    let shedding = shedding.unwrap_or_else(|| panic!("never showed shedding:\n{}", tmux.screen()));
    assert!(
        shedding.contains("trend") && shedding.contains("hot"),
        "{shedding}"
    );

    // `s`: random -> semantic, logged.
    tmux.keys("s");
    let switched = tmux
        .wait_for(10, |s| {
            s.contains("policy semantic") && s.contains("policy -> semantic (by hand)")
        })
        .unwrap_or_else(|| panic!("the policy did not change:\n{}", tmux.screen()));
    // The `+` presses reached the header (at least one went before `s`).
    assert!(switched.contains("rate x"), "{switched}");

    tmux.keys("q");
    let end = tmux
        // Wait for the shell's `stty` line too: it is printed just after `EXIT=`.
        .wait_for(90, |s| {
            s.contains("EXIT=") && s.lines().any(|l| matches!(l.trim(), "icanon" | "-icanon"))
        })
        .unwrap_or_else(|| panic!("the run did not end after q:\n{}", tmux.screen()));
    assert!(end.contains("EXIT=0"), "{end}");
    assert!(end.contains("summary of `tui-e2e`"), "{end}");
    assert!(end.contains("query trend: processed"), "{end}");
    assert!(end.contains("policy changed 1 time(s)"), "{end}");
    // Restored: main screen, cooked mode (`icanon`, not `-icanon`), cursor shown.
    assert!(
        end.lines().any(|l| l.trim() == "icanon"),
        "terminal left in raw mode:\n{end}"
    );
    assert_eq!(tmux.var("#{alternate_on}"), "0");
    assert_eq!(tmux.var("#{cursor_flag}"), "1");
    assert!(
        !end.contains("drop points"),
        "dashboard left on screen:\n{end}"
    );
}

#[test]
fn tui_without_a_terminal_is_bad_input_before_the_run_starts() {
    let out = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args(["run", "workloads/quickstart.yaml", "--tui"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tui draws on the terminal"), "{err}");
    assert!(out.stdout.is_empty(), "the run must not have started");
}
