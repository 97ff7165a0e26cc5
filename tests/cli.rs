//! The `rudder` binary end to end, with the real models.

mod common;

use std::process::{Command, Output};

fn rudder(data: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(args)
        .env("RUDDER_DATA_DIR", data)
        .env("RUDDER_MODELS_DIR", common::models_dir())
        .env_remove("RUDDER_LOG")
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
