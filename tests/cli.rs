//! The command line from the outside: exit codes, stdout and stderr.

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};
use std::process::Command;

fn ignite() -> Command {
    let mut command = Command::new(get_cargo_bin("ignite"));
    command.env("NO_COLOR", "1").current_dir(env!("CARGO_MANIFEST_DIR"));
    command
}

#[test]
fn check_clean_file() {
    assert_cmd_snapshot!(ignite().args(["check", "tests/corpus/ok/guard_only_dependency.ign"]));
}

#[test]
fn check_folder() {
    assert_cmd_snapshot!(ignite().args(["check", "contracts"]));
}

/// A `use` that leaves the root file's folder tree needs `--allow-outside`.
#[test]
fn use_outside_the_folder_needs_allow_outside() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("app")).unwrap();
    std::fs::write(
        dir.path().join("shared.ign"),
        "contract Shared {\n  input x: integer\n  output x\n}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("app/main.ign"), "use \"../shared.ign\"\n").unwrap();
    let refused = ignite()
        .args(["check", &dir.path().join("app/main.ign").display().to_string()])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("ignite::import::outside") && stderr.contains("--allow-outside"),
        "{stderr}"
    );
    let allowed = ignite()
        .args(["check", "--allow-outside", &dir.path().join("app/main.ign").display().to_string()])
        .output()
        .unwrap();
    assert!(allowed.status.success(), "{}", String::from_utf8_lossy(&allowed.stderr));
}

/// A folder holding a symbolic link to itself is read once, not forever.
#[test]
fn check_folder_with_a_symlink_loop() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.ign"), "contract A {\n  input x: integer\n  output x\n}\n")
        .unwrap();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("again")).unwrap();
    let output = ignite().arg("check").arg(dir.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "");
}

/// A builtin `fs` tool with no `root` in a file named without a folder
/// (`ignite run fs.ign`) reads from `.`, the file's folder.
#[test]
fn run_fs_tool_of_a_bare_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let program = "tool ReadFile {\n  param path: string\n  builtin \"fs.read\"\n}\n\ncontract Read {\n  input path: string\n  compute text = ReadFile(path: path)\n  output text\n}\n";
    std::fs::write(dir.path().join("fs.ign"), program).unwrap();
    std::fs::write(dir.path().join("data.txt"), "hello").unwrap();
    let output = ignite()
        .current_dir(dir.path())
        .args(["run", "fs.ign", "--input", "path=data.txt"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let outputs: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outputs, serde_json::json!({"text": "hello"}));
}

/// `--jobs` takes 1 to 65535; a huge pool is capped, not spawned.
#[test]
fn run_jobs_bounds() {
    let file = "tests/corpus/run/defaults.ign";
    let inputs = "tests/corpus/run/defaults.inputs.json";
    for (jobs, code) in [("0", 2), ("65536", 2), ("65535", 0)] {
        let output =
            ignite().args(["run", file, "--inputs", inputs, "--jobs", jobs]).output().unwrap();
        assert_eq!(output.status.code(), Some(code), "--jobs {jobs}");
    }
}

/// A reader that went away (`ignite run … | head`) ends the output
/// quietly: no panic, and each command keeps its own exit code.
#[test]
fn a_closed_stdout_ends_output_quietly() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills both descriptors, which are owned below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just created and nothing else owns them.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    let pricing = ["contracts/pricing.ign", "--inputs", "contracts/pricing.inputs.json"];
    let commands: [(&[&str], i32); 5] = [
        (&["run", pricing[0], pricing[1], pricing[2]], 0),
        (&["graph", "contracts/pricing.ign"], 0),
        (&["check", "--format", "json", "tests/corpus/err/unknown_name.ign"], 1),
        (&["schema", "contracts/assistant.ign"], 0),
        (&["tools", "contracts/assistant.ign"], 0),
    ];
    for (args, code) in commands {
        let output = ignite().args(args).stdout(write.try_clone().unwrap()).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("standard output"), "{args:?}: {stderr}");
        assert_eq!(output.status.code(), Some(code), "{args:?}: {stderr}");
    }
}

#[test]
fn check_errors() {
    assert_cmd_snapshot!(ignite().args(["check", "tests/corpus/err/unknown_name.ign"]));
}

#[test]
fn check_warnings_pass() {
    assert_cmd_snapshot!(ignite().args(["check", "tests/corpus/ok/unused_warning.ign"]));
}

#[test]
fn check_deny_warnings() {
    assert_cmd_snapshot!(ignite().args([
        "check",
        "--deny-warnings",
        "tests/corpus/ok/unused_warning.ign"
    ]));
}

#[test]
fn check_missing_path() {
    assert_cmd_snapshot!(ignite().args(["check", "no/such/file.ign"]));
}

#[test]
fn check_json() {
    assert_cmd_snapshot!(ignite().args([
        "check",
        "--format",
        "json",
        "tests/corpus/err/missing_argument.ign",
        "tests/corpus/ok/unused_warning.ign"
    ]));
}

#[test]
fn check_shared_file_reported_once() {
    // The same file given twice: its diagnostics print once.
    assert_cmd_snapshot!(ignite().args([
        "check",
        "tests/corpus/err/missing_use.ign",
        "tests/corpus/err/missing_use.ign"
    ]));
}

#[test]
fn check_help() {
    assert_cmd_snapshot!(ignite().args(["check", "--help"]));
}

#[test]
fn help() {
    assert_cmd_snapshot!(ignite().arg("--help"));
}

#[test]
fn run_example() {
    assert_cmd_snapshot!(ignite().args([
        "run",
        "contracts/pricing.ign",
        "--inputs",
        "contracts/pricing.inputs.json"
    ]));
}

#[test]
fn run_inputs_from_flags_and_stdin() {
    // `--input` values are JSON when they parse, else strings; they win over `--inputs`.
    assert_cmd_snapshot!(
        ignite()
            .args([
                "run",
                "contracts/report.ign",
                "--inputs",
                "-",
                "--input",
                "region=apac",
                "--input",
                "target=500"
            ])
            .pass_stdin(r#"{"sales": [100, 250.5], "region": "emea"}"#)
    );
}

#[test]
fn run_input_read_by_declared_type() {
    // `level` is an enum and `order` a record: the enum's text is taken as is, the
    // record's JSON is parsed; `123` for a `string` input would be the text "123".
    assert_cmd_snapshot!(ignite().args([
        "run",
        "tests/corpus/run/records.ign",
        "--input",
        r#"order={"lines": [{"sku": "1"}, {"sku": "2", "qty": 2}], "note": null}"#,
        "--input",
        "level=high",
    ]));
}

#[test]
fn run_string_input_stays_text() {
    assert_cmd_snapshot!(ignite().args([
        "run",
        "tests/corpus/run/defaults.ign",
        "--input",
        "name=12345",
        "--input",
        "title=007",
    ]));
}

#[test]
fn run_selected_output_runs_only_what_it_needs() {
    // The trace's times vary from run to run; its rows do not.
    insta::with_settings!({filters => vec![(r"\d+\.\dms", "[time]")]}, {
        assert_cmd_snapshot!(ignite().args([
            "run",
            "tests/corpus/run/compose.ign",
            "--input",
            "price=10",
            "--output",
            "first",
            "--trace"
        ]));
    });
}

/// An output that reads an input directly: the run finishes as the input
/// is bound (this used to finish the execution twice and panic).
#[test]
fn run_output_of_an_input() {
    assert_cmd_snapshot!(ignite().args([
        "run",
        "tests/corpus/run/pass_through.ign",
        "--input",
        "word=hi",
        "--output",
        "original"
    ]));
}

/// `exec` children never see provider keys, whatever their provider.
#[test]
fn run_exec_children_get_no_keys() {
    assert_cmd_snapshot!(
        ignite()
            .args(["run", "tests/corpus/run/exec_environment.ign"])
            .env("OPENAI_API_KEY", "sk-openai")
            .env("GEMINI_API_KEY", "gemini-key")
            .env("ANTHROPIC_AUTH_TOKEN", "anthropic-token")
            .env("SHOP_SECRET", "shop-key")
    );
}

/// Files that are not regular (devices, FIFOs, folders) are refused before
/// they are opened, as programs and as `--inputs`.
#[test]
fn run_refuses_files_that_are_not_regular() {
    assert_cmd_snapshot!(ignite().args(["run", "/dev/zero"]));
    assert_cmd_snapshot!(
        "run_inputs_not_regular",
        ignite().args(["run", "contracts/pricing.ign", "--inputs", "/dev/zero"])
    );
    assert_cmd_snapshot!("check_not_regular", ignite().args(["check", "/dev/zero"]));
}

/// `--max-bytes` takes a size with an optional unit.
#[test]
fn run_max_bytes_flag() {
    assert_cmd_snapshot!(ignite().args([
        "run",
        "contracts/pricing.ign",
        "--inputs",
        "contracts/pricing.inputs.json",
        "--max-bytes",
        "5Q"
    ]));
}

/// `--trace` prints the timeline and the tokens spent also when the run
/// fails, before the error.
#[test]
fn run_trace_when_the_run_fails() {
    insta::with_settings!({filters => vec![(r" *\d+\.\dms", " [time]")]}, {
        assert_cmd_snapshot!(ignite().args([
            "run",
            "tests/corpus/run_err/agent_tool_loop.ign",
            "--trace"
        ]));
    });
}

#[test]
fn run_unknown_output() {
    assert_cmd_snapshot!(ignite().args([
        "run",
        "tests/corpus/run/compose.ign",
        "--input",
        "price=10",
        "--output",
        "totl"
    ]));
}

#[test]
fn run_bad_inputs_exit_2() {
    assert_cmd_snapshot!(ignite().args([
        "run",
        "contracts/pricing.ign",
        "--input",
        "prices=oops",
        "--input",
        "discont_pct=5"
    ]));
}

#[test]
fn run_bad_input_flag() {
    assert_cmd_snapshot!(ignite().args(["run", "contracts/pricing.ign", "--input", "prices"]));
}

#[test]
fn run_node_failure_exit_3() {
    assert_cmd_snapshot!(ignite().args([
        "run",
        "tests/corpus/run_err/division_by_zero.ign",
        "--inputs",
        "tests/corpus/run_err/division_by_zero.inputs.json"
    ]));
}

/// An item of a `for` fails: exit 3, the item in the error, and nothing on
/// stdout (no outputs printed as if complete).
#[test]
fn run_collection_item_failure_prints_no_outputs() {
    assert_cmd_snapshot!(ignite().args([
        "run",
        "tests/corpus/run_err/for_item_failure.ign",
        "--inputs",
        "tests/corpus/run_err/for_item_failure.inputs.json"
    ]));
}

#[test]
fn run_several_contracts_need_a_name() {
    assert_cmd_snapshot!(ignite().args(["run", "tests/corpus/ok/two_contracts.ign"]));
    assert_cmd_snapshot!(
        "run_contract_by_name",
        ignite().args([
            "run",
            "tests/corpus/ok/two_contracts.ign",
            "--contract",
            "Celsius",
            "--input",
            "fahrenheit=212"
        ])
    );
    assert_cmd_snapshot!(
        "run_contract_typo",
        ignite().args(["run", "tests/corpus/ok/two_contracts.ign", "--contract", "Celcius"])
    );
}

#[test]
fn run_check_errors_do_not_run() {
    assert_cmd_snapshot!(ignite().args(["run", "tests/corpus/err/unknown_name.ign"]));
}

#[test]
fn graph_formats() {
    for format in ["text", "mermaid", "dot"] {
        assert_cmd_snapshot!(
            format!("graph_{format}"),
            ignite().args([
                "graph",
                "tests/corpus/run/compose.ign",
                "--contract",
                "Line",
                "--format",
                format
            ])
        );
    }
}

/// Conditional edges: an arm's inputs (labelled with the arm's pattern)
/// and the gates from guards to effects are drawn dashed.
#[test]
fn graph_conditional_edges() {
    for format in ["text", "mermaid", "dot"] {
        assert_cmd_snapshot!(
            format!("graph_branches_{format}"),
            ignite().args(["graph", "tests/corpus/run/branches.ign", "--format", format])
        );
    }
    assert_cmd_snapshot!(
        "graph_gates",
        ignite().args(["graph", "contracts/triage.ign", "--contract", "Triage"])
    );
}

/// `--calls` labels each node that asks models with its worst case (the
/// plan fixture's numbers, worked out by hand in its comment).
#[test]
fn graph_worst_case_calls() {
    for format in ["text", "mermaid", "dot"] {
        assert_cmd_snapshot!(
            format!("graph_calls_{format}"),
            ignite().args(["graph", "tests/corpus/plan/triage.ign", "--calls", "--format", format])
        );
    }
}

#[test]
fn schema_formats() {
    assert_cmd_snapshot!(
        "schema_intermediate",
        ignite().args(["schema", "contracts/assistant.ign"])
    );
    assert_cmd_snapshot!(
        "schema_anthropic",
        ignite().args(["schema", "contracts/assistant.ign", "--provider", "anthropic"])
    );
    assert_cmd_snapshot!(
        "schema_openai_filtered",
        ignite().args([
            "schema",
            "contracts/assistant.ign",
            "--provider",
            "openai",
            "--capabilities",
            "none"
        ])
    );
}

#[test]
fn tools_table() {
    assert_cmd_snapshot!(ignite().args(["tools", "contracts/report.ign"]));
    assert_cmd_snapshot!(
        "tools_table_filtered",
        ignite().args(["tools", "contracts/assistant.ign", "--capabilities", "database_read"])
    );
}

/// `--record` saves the provider exchanges of a run against a (fake)
/// OpenAI server; `--replay` then runs the same pipeline with no server and
/// no key, to the same outputs. The key never reaches the recording.
#[test]
fn record_then_replay_offline() {
    let dir = tempfile::tempdir().unwrap();
    let program = r#"
tool Double {
  description "Doubles a number"
  param n: integer
  returns n * 2
}

agent Helper {
  provider openai
  model "gpt-test"
  tools Double
  input question: string
}

contract Ask {
  input question: string
  compute answer = Helper(question)
  output answer
}
"#;
    std::fs::write(dir.path().join("ask.ign"), program).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(async {
        use wiremock::matchers::{body_string_contains, method, path};
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let server = MockServer::start().await;
        let call = serde_json::json!({"choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "double", "arguments": "{\"n\": 21}"}}]},
            "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 12, "completion_tokens": 5}});
        let done = serde_json::json!({"choices": [{"message": {"role": "assistant", "content": "It is 42."},
            "finish_reason": "stop"}], "usage": {"prompt_tokens": 30, "completion_tokens": 4}});
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(body_string_contains("\"tool_call_id\":\"c1\""))
            .respond_with(ResponseTemplate::new(200).set_body_json(done))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_json(call))
            .mount(&server)
            .await;
        server
    });
    let recording = dir.path().join("ask.recording.json");
    let recorded = ignite()
        .current_dir(dir.path())
        .env("OPENAI_BASE_URL", format!("{}/v1", server.uri()))
        .env("OPENAI_API_KEY", "sk-secret-never-printed")
        .args(["run", "ask.ign", "--input", "question=what is 21 doubled?", "--record"])
        .arg(&recording)
        .output()
        .unwrap();
    assert!(recorded.status.success(), "{}", String::from_utf8_lossy(&recorded.stderr));
    drop(server);
    let saved = std::fs::read_to_string(&recording).unwrap();
    assert!(!saved.contains("sk-secret"), "the key leaked into the recording");
    assert!(saved.contains("gpt-test"));

    let replayed = ignite()
        .current_dir(dir.path())
        .env_remove("OPENAI_API_KEY")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .args(["run", "ask.ign", "--input", "question=what is 21 doubled?", "--replay"])
        .arg(&recording)
        .output()
        .unwrap();
    assert!(replayed.status.success(), "{}", String::from_utf8_lossy(&replayed.stderr));
    assert_eq!(replayed.stdout, recorded.stdout);
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout).trim(),
        "{\n  \"answer\": \"It is 42.\"\n}"
    );

    // A different question is a different request: replay says so.
    let differs = ignite()
        .current_dir(dir.path())
        .args(["run", "ask.ign", "--input", "question=what is 22 doubled?", "--replay"])
        .arg(&recording)
        .output()
        .unwrap();
    assert_eq!(differs.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&differs.stderr);
    assert!(stderr.contains("22 doubled"), "{stderr}");
}

#[test]
fn run_missing_file() {
    assert_cmd_snapshot!(ignite().args(["run", "no/such/file.ign"]));
}

/// `--input NAME=@FILE` reads a file from the current folder, `{"path": ...}`
/// in `--inputs` one from the inputs file's folder.
#[test]
fn run_media_inputs_from_files() {
    assert_cmd_snapshot!(ignite().args([
        "run",
        "tests/corpus/media/files.ign",
        "--input",
        "photo=@tests/corpus/media/tiny.png",
        "--inputs",
        "tests/corpus/media/files.inputs.json",
    ]));
}

/// `@FILE` and `{"path": ...}` wherever a media type is written: each
/// `--input scans=@FILE` adds an item to an `array<image>` (replacing the
/// array `--inputs` gave), an `image?` input reads its file, and
/// `{"path": ...}` is read inside records and arrays, in `--inputs` (from
/// its folder) and in `--input` JSON (from the current folder).
#[test]
fn run_media_inputs_in_every_place() {
    assert_cmd_snapshot!(ignite().args([
        "run",
        "tests/corpus/media/places.ign",
        "--inputs",
        "tests/corpus/media/places.inputs.json",
        "--input",
        "scans=@tests/corpus/media/tiny.png",
        "--input",
        "scans=@tests/corpus/media/tiny.jpg",
        "--input",
        "cover=@tests/corpus/media/tiny.webp",
        "--input",
        r#"receipt={"photo": {"path": "tests/corpus/media/tiny.gif"}, "total": 1}"#,
    ]));
    // Without `--input`: the array from `--inputs`, the rest absent.
    let output = ignite()
        .args(["run", "tests/corpus/media/places.ign", "--inputs"])
        .arg("tests/corpus/media/places.inputs.json")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let outputs: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(outputs["scan_types"], serde_json::json!(["image/gif"]));
    assert_eq!(outputs["cover_type"], serde_json::Value::Null);
    // A file of the wrong kind for an array's item, and a bad `{"path": ...}`
    // in `--input` JSON, are input errors naming the place.
    for (input, expected) in [
        (
            "scans=@tests/corpus/media/tiny.pdf",
            "input `scans`: `tests/corpus/media/tiny.pdf`: expected an image, got a PDF document",
        ),
        (
            r#"receipt={"photo": {"path": "tests/corpus/media/tiny.pdf"}, "total": 1}"#,
            "input `receipt.photo`: `tests/corpus/media/tiny.pdf`: expected an image, got a PDF document",
        ),
    ] {
        let output = ignite()
            .args(["run", "tests/corpus/media/places.ign", "--input", input])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{input}: {stderr}");
        assert!(stderr.contains(expected), "{input}: expected {expected:?} in\n{stderr}");
    }
}

/// `file("...")` is refused over `--max-bytes` (8 MiB by default) by its
/// size, the error naming the file, its size and the flag.
#[test]
fn run_file_follows_max_bytes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy("tests/corpus/media/tiny.png", dir.path().join("tiny.png")).unwrap();
    let text = "contract Logo {\n  compute logo = file(\"tiny.png\")\n  \
        compute logo_type = logo.media_type\n  output logo_type\n}\n";
    std::fs::write(dir.path().join("logo.ign"), text).unwrap();
    let run = |extra: &[&str]| {
        ignite().current_dir(dir.path()).args(["run", "logo.ign"]).args(extra).output().unwrap()
    };
    let read = run(&["--max-bytes", "69"]);
    assert!(read.status.success(), "{}", String::from_utf8_lossy(&read.stderr));
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&read.stdout).unwrap(),
        serde_json::json!({"logo_type": "image/png"})
    );
    let refused = run(&["--max-bytes", "68"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("`file`: `./tiny.png` is 69 bytes, more than the limit of 68"),
        "{stderr}"
    );
    assert!(stderr.contains("`--max-bytes`"), "{stderr}");
}

/// Every bad media file is an input error (exit 2) naming the input and
/// what its bytes are; a path out of the inputs file's folder and the
/// current folder is refused, and a file over `--max-bytes` is refused by
/// its size.
#[test]
fn run_media_inputs_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy("tests/corpus/media/png_named.pdf", dir.path().join("scan.pdf")).unwrap();
    let huge = dir.path().join("huge.png");
    std::fs::File::create(&huge).unwrap().set_len(100 << 20).unwrap();
    let inputs = |name: &str, pages: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("{{\"pages\": [{{\"path\": \"{pages}\"}}]}}")).unwrap();
        path.display().to_string()
    };
    let png = "photo=@tests/corpus/media/tiny.png".to_owned();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--input".into(), "photo=@tests/corpus/media/json_named.png".into()],
            "input `photo`: `tests/corpus/media/json_named.png`: expected an image (PNG, JPEG, GIF or WebP), got bytes that are none of them",
        ),
        (
            vec!["--input".into(), "photo=@tests/corpus/media/truncated.png".into()],
            "a PNG image is truncated: it does not end with an `IEND` chunk",
        ),
        (
            vec!["--input".into(), format!("photo=@{}", huge.display())],
            "is 104857600 bytes, more than the limit of 8388608 (raise it with `--max-bytes`)",
        ),
        (
            vec!["--input".into(), png.clone(), "--max-bytes".into(), "10".into()],
            "tiny.png` is 69 bytes, more than the limit of 10",
        ),
        (
            vec!["--input".into(), "photo=@no/such.png".into()],
            "input `photo`: cannot read `no/such.png`",
        ),
        (
            vec!["--input".into(), png.clone(), "--inputs".into(), inputs("a.json", "scan.pdf")],
            "input `pages[0]`: `scan.pdf`: expected a document, got a PNG image",
        ),
        (
            vec![
                "--input".into(),
                png.clone(),
                "--inputs".into(),
                inputs("b.json", "../../../../../../etc/passwd"),
            ],
            "input `pages[0]`: `../../../../../../etc/passwd` is outside the inputs file's folder and the current folder",
        ),
    ];
    for (args, expected) in cases {
        let output =
            ignite().args(["run", "tests/corpus/media/files.ign"]).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: expected {expected:?} in\n{stderr}");
    }
}

/// `--batch` rows read `{"path": ...}` media from the rows file's folder;
/// a row whose file is missing fails alone, as an input error.
#[test]
fn run_batch_media_rows() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy("tests/corpus/media/tiny.png", dir.path().join("tiny.png")).unwrap();
    let rows = dir.path().join("rows.jsonl");
    std::fs::write(
        &rows,
        "{\"photo\": {\"path\": \"tiny.png\"}}\n{\"photo\": {\"path\": \"gone.png\"}}\n",
    )
    .unwrap();
    let output = ignite()
        .args(["run", "tests/corpus/media/files.ign", "--batch"])
        .arg(&rows)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["outputs"]["photo_type"], "image/png");
    assert_eq!(lines[1]["error"]["code"], "ignite::run::input");
    let message = lines[1]["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("input `photo`: cannot read `") && message.contains("gone.png"),
        "{message}"
    );
}

/// The invoice example runs offline from its cassette, the files read from
/// `{"path": ...}` inputs beside it.
#[test]
fn run_invoice_example_offline() {
    assert_cmd_snapshot!(ignite().args([
        "run",
        "contracts/invoices/invoices.ign",
        "--inputs",
        "contracts/invoices/invoices.inputs.json",
        "--replay",
        "contracts/invoices/invoices.jsonl",
    ]));
}
