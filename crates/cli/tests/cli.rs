//! The `rudder` binary end to end, with the real models.

use rudder_testkit as common;

use std::process::{Command, Output};

fn rudder(data: &std::path::Path, args: &[&str]) -> Output {
    common::command(env!("CARGO_BIN_EXE_rudder"), data)
        .args(args)
        .output()
        .expect("run rudder")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn ask_with_schema_prints_json_valid_under_it() {
    common::store();
    let data = tempfile::tempdir().unwrap();
    let schema = data.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","properties":{
            "city":{"type":"string","maxLength":40},
            "population_millions":{"type":"number"},
            "landmarks":{"type":"array","items":{"type":"string","maxLength":30},"maxItems":3}
          },"required":["city","population_millions","landmarks"],"additionalProperties":false}"#,
    )
    .unwrap();
    let out = rudder(
        data.path(),
        &[
            "ask",
            "--model",
            common::CHAT_MODEL,
            "--schema",
            schema.to_str().unwrap(),
            "Tell me about Paris.",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("stdout is JSON");
    let obj = value.as_object().expect("an object");
    assert_eq!(obj.len(), 3, "{value}");
    assert!(obj["city"]
        .as_str()
        .is_some_and(|s| s.chars().count() <= 40));
    assert!(obj["population_millions"].is_number());
    let landmarks = obj["landmarks"].as_array().unwrap();
    assert!(landmarks.len() <= 3 && landmarks.iter().all(|l| l.is_string()));
}

/// A schema with no bounds (#31, item 7): SmolLM2 used to write questions until the token
/// limit and exit with "the model's output is not JSON … EOF while parsing". Bounded, the
/// answer closes, with the budget sized from the bounds and with a low `--max-tokens`.
#[test]
fn ask_with_an_unbounded_schema_still_closes_its_json() {
    common::store();
    let data = tempfile::tempdir().unwrap();
    let schema = data.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","properties":{"questions":{"type":"array","items":{"type":"object",
            "properties":{"question":{"type":"string"},"confidence":{"type":"number"}},
            "required":["question","confidence"]}}},"required":["questions"]}"#,
    )
    .unwrap();
    for limit in [None, Some("200")] {
        let mut args = vec![
            "ask",
            "--model",
            common::CHAT_MODEL,
            "--schema",
            schema.to_str().unwrap(),
        ];
        if let Some(limit) = limit {
            args.extend(["--max-tokens", limit]);
        }
        args.push("Questions a nurse might ask about night shifts");
        let out = rudder(data.path(), &args);
        assert!(out.status.success(), "{limit:?}: {}", stderr(&out));
        let value: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("stdout is JSON");
        let questions = value["questions"]
            .as_array()
            .expect("an array of questions");
        assert!(questions.len() <= 8, "{value}");
        for q in questions {
            let text = q["question"].as_str().expect("a question");
            assert!(text.chars().count() <= 160, "{text}");
            assert!(q["confidence"].is_number(), "{q}");
        }
    }
}

#[test]
fn ask_streams_text_and_reports_usage_as_json() {
    common::store();
    let data = tempfile::tempdir().unwrap();
    let out = rudder(
        data.path(),
        &[
            "ask",
            "--json",
            "--model",
            common::CHAT_MODEL,
            "--max-tokens",
            "24",
            "Name a colour.",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(!v["answer"].as_str().unwrap().trim().is_empty());
    assert!(v["usage"]["generated_tokens"].as_u64().unwrap() > 0);
    assert_eq!(v["model"], common::CHAT_MODEL);
}

#[test]
fn embed_prints_dimensions_and_similarities() {
    common::store();
    let data = tempfile::tempdir().unwrap();
    let out = rudder(
        data.path(),
        &[
            "embed",
            "--json",
            "a cat on a mat",
            "a kitten on a rug",
            "tax law",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["dimensions"], 384);
    let m = &v["cosine"];
    assert!((m[0][0].as_f64().unwrap() - 1.0).abs() < 1e-3);
    assert!(m[0][1].as_f64().unwrap() > m[0][2].as_f64().unwrap());
}

#[test]
fn a_truncated_model_is_refused_before_loading() {
    let store = common::store();
    let real = store.ready_path(common::CHAT_MODEL).unwrap();
    let data = tempfile::tempdir().unwrap();
    let models = data.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    let bytes = std::fs::read(&real).unwrap();
    std::fs::write(
        models.join(real.file_name().unwrap()),
        &bytes[..bytes.len() / 2],
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(["ask", "--model", common::CHAT_MODEL, "hello"])
        .env("RUDDER_DATA_DIR", data.path())
        .env_remove("RUDDER_MODELS_DIR")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("truncated") && err.contains(".gguf"), "{err}");

    let status = rudder_status(data.path());
    assert_eq!(
        status["chat_model_state"], "missing",
        "default chat model is not installed here"
    );
}

fn rudder_status(data: &std::path::Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(["status", "--json"])
        .env("RUDDER_DATA_DIR", data)
        .env_remove("RUDDER_MODELS_DIR")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn models_list_and_errors_are_clear() {
    let data = tempfile::tempdir().unwrap();
    let out = rudder(data.path(), &["models", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"qwen2.5-coder-1.5b-instruct") && names.contains(&"all-minilm-l6-v2"));

    let out = rudder(data.path(), &["ask", "--model", "no-such-model", "hi"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no-such-model"), "{}", stderr(&out));
    // The engine names the remedy, the CLI words it as a command (the window as a screen).
    assert!(
        stderr(&out).contains("to fix it: `rudder models list`"),
        "{}",
        stderr(&out)
    );
    // A known model that is not on disk (the test models are SmolLM2 and MiniLM only).
    let out = rudder(
        data.path(),
        &["ask", "--model", "qwen2.5-coder-1.5b-instruct", "hi"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("to fix it: run `rudder models fetch qwen2.5-coder-1.5b-instruct`"),
        "{}",
        stderr(&out)
    );

    let out = rudder(
        data.path(),
        &["ask", "--schema", "/nonexistent/schema.json", "hi"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("/nonexistent/schema.json"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn ctrl_c_stops_ask_and_keeps_the_partial_answer() {
    use std::io::Read;
    common::store();
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args([
            "ask",
            "--model",
            common::CHAT_MODEL,
            "--max-tokens",
            "2000",
            "Write a very long story about the sea.",
        ])
        .env("RUDDER_DATA_DIR", data.path())
        .env("RUDDER_MODELS_DIR", common::models_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the answer has started streaming, then interrupt.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    let n = stdout.read(&mut first).unwrap();
    assert!(n > 0, "no output before the interrupt");
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted after"), "{err}");
}

/// A records.json entry as `rudder eval run` writes it (only `record` is read back).
fn eval_output(case: &str, system: &str, c0: Option<f32>, alignment: f32) -> serde_json::Value {
    serde_json::json!({
        "record": {
            "case_id": case, "system": system, "c0": c0, "alignment": alignment, "focus": 0.5,
            "checklist": 0.25, "bespoke": [3.0, 3.0, 3.0, 3.0], "pauses": u32::from(c0.is_some()),
            "llm_calls": 9, "prompt_tokens": 5000, "generated_tokens": 1000, "seconds": 60.0,
        },
        "report_markdown": "# R", "per_aspect": [1], "key_points": [], "checklist": [],
    })
}

#[test]
fn eval_table_merges_run_folders_and_compares_systems_on_the_same_cases() {
    let data = tempfile::tempdir().unwrap();
    let first = data.path().join("part1");
    let second = data.path().join("part2");
    for dir in [&first, &second] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let write = |path: std::path::PathBuf, value: serde_json::Value| {
        std::fs::write(path, serde_json::to_string(&value).unwrap()).unwrap()
    };
    write(
        first.join("records.json"),
        serde_json::json!([
            eval_output("c1", "query-only", None, 0.2),
            eval_output("c1", "rudder", Some(0.4), 0.6),
        ]),
    );
    // c2's rudder run failed, so c2 must not count in any row; c3 is complete.
    write(
        second.join("records.json"),
        serde_json::json!([
            eval_output("c2", "query-only", None, 1.0),
            eval_output("c3", "query-only", None, 0.4),
            eval_output("c3", "rudder", Some(0.4), 0.8),
            // A sweep stopped before c4's rudder run: c4 is not compared either.
            eval_output("c4", "query-only", None, 0.9),
        ]),
    );
    write(
        second.join("failures.json"),
        serde_json::json!([{"case_id": "c2", "system": "rudder@0.4", "error": "judge: …"}]),
    );
    let merged = data.path().join("merged");
    let merge = || {
        rudder(
            data.path(),
            &[
                "eval",
                "table",
                first.to_str().unwrap(),
                second.to_str().unwrap(),
                "--out",
                merged.to_str().unwrap(),
            ],
        )
    };
    let out = merge();
    assert!(out.status.success(), "{}", stderr(&out));
    let table = std::fs::read_to_string(merged.join("table.md")).unwrap();
    assert!(table.contains("| query-only | 2 | 30.0 |"), "{table}");
    assert!(
        table.contains("| rudder (C0 = 0.4) | 2 | 70.0 |"),
        "{table}"
    );
    assert!(table.contains("1 run(s) failed"), "{table}");
    assert!(
        table.contains("1 case(s) without a run of every system are left out of every row: c4."),
        "{table}"
    );
    let records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(merged.join("records.json")).unwrap())
            .unwrap();
    assert_eq!(
        records.len(),
        6,
        "every record is kept, the left-out cases' too"
    );
    assert!(std::fs::read_to_string(merged.join("c0.svg"))
        .unwrap()
        .contains("<svg"));

    // A broken records file is named.
    std::fs::write(second.join("records.json"), "[{\"record\": 3}]").unwrap();
    let out = merge();
    assert!(!out.status.success());
    let error = stderr(&out);
    assert!(
        error.contains("part2/records.json") && error.contains("record 1"),
        "{error}"
    );
}

/// `rudder eval` and `rudder bench` run the second binaries beside `rudder` (the test above
/// goes through that for `eval table`); without them, the error names the missing binary and
/// how to build it, instead of a bare "not found".
#[test]
fn eval_and_bench_without_their_binaries_say_how_to_build_them() {
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("rudder");
    std::fs::copy(env!("CARGO_BIN_EXE_rudder"), &alone).unwrap();
    for (command, binary) in [("eval", "rudder-eval"), ("bench", "rudder-bench")] {
        let out = Command::new(&alone)
            .args([command, "--help"])
            .env("RUDDER_DATA_DIR", dir.path().join("data"))
            .env("PATH", dir.path().join("empty"))
            .output()
            .unwrap();
        assert!(!out.status.success());
        let error = stderr(&out);
        assert!(
            error.contains(&format!("`{binary}`"))
                && error.contains(&format!("cargo build -p {binary}")),
            "{error}"
        );
    }
}
