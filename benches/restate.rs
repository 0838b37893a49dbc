//! The cost of `ignite serve --restate` per effect, against plain `ignite
//! serve` on the same machine: `cargo bench --features restate --bench
//! restate`; figures go to BENCHMARKS.md.
//!
//! The official Restate server (`scripts/restate-server.sh`, on 127.0.0.1)
//! fronts one release worker; a plain `ignite serve` runs beside it. Each
//! serves contracts that chain N tool calls one after the other (`returns`
//! tools, which cost next to nothing, and `exec` tools, a child process
//! each), a contract with no effect and one with N independent `exec`
//! tools that each sleep 50 ms (in parallel, about 50 ms in all). One
//! client sends requests one at a time, the cases alternating round by
//! round; the cost per effect is (median of the chain − median of the
//! contract without effects) / N.

#![allow(clippy::print_stdout, clippy::unwrap_used, missing_docs)]

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

/// Tool calls per chain.
const CALLS: usize = 20;
const ROUNDS: usize = 9;
const PER_ROUND: usize = 10;

fn program() -> String {
    let mut text = String::from(
        "tool Inc {\n  description \"adds one\"\n  param n: integer\n  returns n + 1\n}\n\n\
         tool Cat {\n  description \"echoes its arguments\"\n  param n: integer\n  exec \"cat\"\n}\n\n\
         tool Nap {\n  description \"sleeps 50 ms\"\n  param n: integer\n  exec \"sh\" \"-c\" \"sleep 0.05; cat\"\n}\n\n\
         contract Pure {\n  input n: integer\n  compute a = n + 1\n  output a\n}\n",
    );
    let _ = write!(text, "\ncontract Wide {{\n  input n: integer\n");
    for i in 1..=CALLS {
        let _ = writeln!(text, "  compute a{i} = Nap(n: n + {i})\n  output a{i}");
    }
    text.push_str("}\n");
    for (contract, tool, field) in [("Returns", "Inc", ""), ("Exec", "Cat", ".n")] {
        let _ = write!(text, "\ncontract {contract} {{\n  input n: integer\n  compute a0 = n\n");
        for i in 1..=CALLS {
            let _ = writeln!(
                text,
                "  compute a{i} = {tool}(n: a{}{})",
                i - 1,
                if i > 1 { field } else { "" }
            );
        }
        let _ = writeln!(text, "  output a{CALLS}\n}}");
    }
    text
}

/// Starts `ignite serve FILE ARGS... --port 0` in `dir`: the process and its address.
fn serve(dir: &Path, args: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ignite"))
        .current_dir(dir)
        .args(["serve", "bench.ign", "--port", "0"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let address = loop {
        let line = lines.next().expect("an address").unwrap();
        if let Some(address) = line.strip_prefix("listening on ") {
            break address.to_owned();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    (child, address)
}

fn script(args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/restate-server.sh");
    let output = Command::new(script).args(args).stderr(Stdio::inherit()).output().unwrap();
    assert!(output.status.success(), "restate-server.sh {args:?} failed");
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bench.ign"), program()).unwrap();
    let data = tempfile::tempdir().unwrap();
    let started = script(&["start", &data.path().to_string_lossy()]);
    let field = |name: &str| {
        started
            .split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .unwrap()
            .to_owned()
    };
    let (pid, ingress, admin) = (field("pid"), field("ingress"), field("admin"));
    let (mut worker, worker_url) = serve(dir.path(), &["--restate"]);
    let (mut plain, plain_url) = serve(dir.path(), &[]);
    script(&["register", &admin, &worker_url]);

    let client = igniter::http_client::builder().build().expect("an HTTP client");
    let body = json!({"n": 1});
    let cases = ["Pure", "Returns", "Exec", "Wide"];
    let url = |restate: bool, contract: &str| {
        if restate {
            format!("{ingress}/{contract}/run")
        } else {
            format!("{plain_url}/contracts/{contract}")
        }
    };
    // Warm up both paths (connections, the worker's first run).
    for restate in [false, true] {
        for contract in cases {
            let response = client.post(url(restate, contract)).json(&body).send().await.unwrap();
            assert_eq!(response.status(), 200, "{contract} (restate: {restate})");
        }
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); 2 * cases.len()];
    for _ in 0..ROUNDS {
        for (i, (restate, contract)) in
            [false, true].into_iter().flat_map(|r| cases.map(|c| (r, c))).enumerate()
        {
            for _ in 0..PER_ROUND {
                let sent = Instant::now();
                let response =
                    client.post(url(restate, contract)).json(&body).send().await.unwrap();
                assert_eq!(response.status(), 200);
                response.bytes().await.unwrap();
                times[i].push(sent.elapsed());
            }
        }
    }
    let _ = worker.kill();
    let _ = plain.kill();
    let _ = Command::new("kill").arg(&pid).status();

    let median = |i: usize| {
        let mut t = times[i].clone();
        t.sort();
        t[t.len() / 2].as_secs_f64() * 1e3
    };
    let ms = |restate: bool, case: usize| median(usize::from(restate) * cases.len() + case);
    println!(
        "| contract ({CALLS} chained calls) | plain serve | --restate | per call, plain | per call, --restate | ratio per call |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    println!("| no effect | {:.2} ms | {:.2} ms | | | |", ms(false, 0), ms(true, 0));
    for (case, name) in [(1, "`returns` tools"), (2, "`exec \"cat\"` tools")] {
        let plain = (ms(false, case) - ms(false, 0)) / CALLS as f64;
        let restate = (ms(true, case) - ms(true, 0)) / CALLS as f64;
        println!(
            "| {name} | {:.2} ms | {:.2} ms | {plain:.3} ms | {restate:.3} ms | {:.1} |",
            ms(false, case),
            ms(true, case),
            restate / plain
        );
    }
    println!(
        "| {CALLS} independent `exec` tools of 50 ms | {:.2} ms | {:.2} ms | | | |",
        ms(false, 3),
        ms(true, 3)
    );
}
