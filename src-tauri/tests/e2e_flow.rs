//! The whole desktop flow in the real window, with the real small model: import a history
//! export (one file of it broken) and a folder of documents, search the history and open a
//! session, run a depth-1 research, answer its pause, steer it,
//! and read the report with a cited source. History and documents carry `<script>` and
//! `onerror` payloads: they must show as text and never run. Every main screen is saved as a
//! screenshot in the artifacts folder (`e2e-*.png`).
//!
//! Needs what `e2e_window.rs` needs plus the test models (`RUDDER_TEST_MODELS_DIR`, fetched by
//! `scripts/test.sh`). `scripts/e2e.sh` runs it.
#![cfg(target_os = "linux")]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{artifacts_dir, check_trace, close, connect_app, strace, traced_app, Driver};
use fantoccini::elements::Element;
use fantoccini::{Client, Locator};
use rudder::research::Event;
use rudder::session::SessionStore;
use serde_json::json;

/// Everything before research is quick; research with SmolLM2 on two CPU cores takes minutes.
const UI_TIMEOUT: Duration = Duration::from_secs(60);
const MODEL_TIMEOUT: Duration = Duration::from_secs(600);

const PAYLOAD_SCRIPT: &str = "<script>window.__pwned = 'script'</script>";
const PAYLOAD_IMG: &str = "<img src=x onerror=\"window.__pwned = 'img'\">";
const QUESTION: &str = "What is the best way to make green tea at home?";
const NEW_QUESTION: &str = "How long does green tea keep once the bag is opened?";
const STEERING: &str = "Also look into water temperature for green tea. Ignore coffee.";
/// The custom instructions in the ChatGPT export; its first sentence is the standing
/// constraint the user corrects.
const INSTRUCTIONS: &str = "I work night shifts as a nurse. I drink green tea to stay awake.";
const CORRECTED: &str = "I work night shifts as a nurse.";
/// What the user writes on the "You" screen: a correction of an inferred statement, and a
/// statement of their own.
const CORRECTION: &str = "I work day shifts in an office";
const STATEMENT: &str = "Keep answers short";
/// The sizes people use: the default window and a large laptop screen.
const SIZES: [(u32, u32); 2] = [(960, 680), (1440, 900)];

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// A ChatGPT export: two tea conversations (one titled with payloads) and, in a sub-folder,
/// a broken copy the import must report by name.
fn write_history_export(dir: &Path) {
    let conversation = |id: &str, title: &str, user: &str, assistant: &str, t: f64| {
        json!({
            "id": id, "conversation_id": id, "title": title,
            "create_time": t, "update_time": t + 60.0,
            "mapping": {
                "root": { "id": "root", "message": null, "parent": null, "children": ["u"] },
                "u": { "id": "u", "parent": "root", "children": ["a"], "message": {
                    "id": "u", "author": { "role": "user" }, "create_time": t + 1.0,
                    "content": { "content_type": "text", "parts": [user] } } },
                "a": { "id": "a", "parent": "u", "children": [], "message": {
                    "id": "a", "author": { "role": "assistant" }, "create_time": t + 2.0,
                    "content": { "content_type": "text", "parts": [assistant] } } }
            },
            "current_node": "a"
        })
    };
    // The user's custom instructions, as ChatGPT keeps them in a conversation: standing
    // constraints the "You" screen shows and every profile carries.
    let mut with_instructions = conversation(
        "c-3",
        "Morning tea",
        "Is sencha or genmaicha better before a night shift?",
        "Genmaicha has less caffeine; sencha wakes you up more.",
        1_700_200_000.0,
    );
    let mapping = with_instructions["mapping"].as_object_mut().unwrap();
    mapping["root"]["children"] = json!(["ctx"]);
    mapping["u"]["parent"] = json!("ctx");
    mapping.insert(
        "ctx".into(),
        json!({ "id": "ctx", "parent": "root", "children": ["u"], "message": {
            "id": "ctx", "author": { "role": "user" }, "create_time": 1_700_200_000.5,
            "content": { "content_type": "user_editable_context",
                "user_profile": format!("User profile:\n```{INSTRUCTIONS}```"),
                "user_instructions": "How to respond:\n```Use metric units.```" } } }),
    );
    let export = json!([
        with_instructions,
        conversation(
            "c-1",
            &format!("Green tea tins {PAYLOAD_SCRIPT}"),
            &format!("Which tin keeps green tea fresh? {PAYLOAD_IMG}"),
            "An opaque, airtight tin in a cool cupboard keeps green tea fresh for months.",
            1_700_000_000.0
        ),
        conversation(
            "c-2",
            "Brewing sencha",
            "What water temperature should I use for sencha? I drink it every morning.",
            "Around 70 to 80 °C for one to two minutes; boiling water makes it bitter.",
            1_700_100_000.0
        ),
    ]);
    std::fs::create_dir_all(dir.join("old")).unwrap();
    std::fs::write(
        dir.join("conversations.json"),
        serde_json::to_string_pretty(&export).unwrap(),
    )
    .unwrap();
    // Cut off in the middle: nothing from it may be stored, and the report must say where.
    let text = serde_json::to_string_pretty(&export).unwrap();
    std::fs::write(dir.join("old/conversations.json"), &text[..text.len() / 2]).unwrap();
}

/// The documents `tests/app_api.rs` uses too (one carries payloads), so SmolLM2 sees the
/// same prompts in both and pauses the same way.
fn write_documents(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/desktop-docs");
    for name in ["brewing.md", "storage.md", "notes.md"] {
        std::fs::copy(fixtures.join(name), dir.join(name)).unwrap();
    }
}

/// Settings for a short, reproducible run with the small model: one generation thread,
/// depth 1, breadth 2, and "let me choose at every branch" so the run pauses at the root
/// whatever SmolLM2's utilities say. Clarifying questions are off: SmolLM2's candidates for
/// this question are all rejected as unrelated (the flow tests cover that conversation).
fn write_settings(data_dir: &Path) {
    std::fs::write(
        data_dir.join("settings.toml"),
        "chat_model = \"smollm2-135m-instruct\"\n\
         [llama]\nthreads = 1\n\
         [research]\ndepth = 1\nbreadth = 2\nc0 = 0.0\ntol = 3.0\nclarify_turns = 0\n\
         always_ask = true\n",
    )
    .unwrap();
}

async fn find(client: &Client, css: &str) -> TestResult<Element> {
    Ok(client.find(Locator::Css(css)).await?)
}

/// Waits until `css` matches a displayed element whose text satisfies `ok`.
async fn wait_text(
    client: &Client,
    css: &str,
    timeout: Duration,
    ok: impl Fn(&str) -> bool,
) -> TestResult<String> {
    let deadline = Instant::now() + timeout;
    let mut last = String::new();
    loop {
        if let Ok(elements) = client.find_all(Locator::Css(css)).await {
            for e in elements {
                if let Ok(text) = e.text().await {
                    if ok(&text) {
                        return Ok(text);
                    }
                    last = text;
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(
                format!("{css}: no matching text after {timeout:?} (last: {last:?})").into(),
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn wait_present(client: &Client, css: &str, timeout: Duration) -> TestResult<Element> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(e) = client.find(Locator::Css(css)).await {
            if e.is_displayed().await.unwrap_or(false) {
                return Ok(e);
            }
        }
        if Instant::now() >= deadline {
            let state = js(client, "const s = document.getElementById('research-state'); return s ? s.textContent : '';").await?;
            return Err(format!("{css} did not appear within {timeout:?} (state: {state})").into());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn click(client: &Client, css: &str) -> TestResult {
    wait_present(client, css, UI_TIMEOUT).await?.click().await?;
    Ok(())
}

async fn fill(client: &Client, css: &str, text: &str) -> TestResult {
    let e = wait_present(client, css, UI_TIMEOUT).await?;
    e.clear().await?;
    e.send_keys(text).await?;
    Ok(())
}

async fn js(client: &Client, script: &str) -> TestResult<String> {
    let v = client.execute(script, Vec::new()).await?;
    Ok(match v {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    })
}

/// Milliseconds from a click on *Sessions* until that screen lists the session (running, as a
/// rule: the run goes on after steering), timed in the page (so WebDriver's own round trips do
/// not count); -1 when it does not within 10 s.
async fn navigation_ms(client: &Client) -> TestResult<f64> {
    let v = client
        .execute_async(
            "const done = arguments[arguments.length - 1];\n\
             const start = performance.now();\n\
             document.getElementById('nav-sessions').click();\n\
             const poll = () => {\n\
               const row = document.querySelector('#screen-sessions .session-row');\n\
               const elapsed = performance.now() - start;\n\
               if (row && row.offsetParent !== null) done(elapsed);\n\
               else if (elapsed > 10000) done(-1);\n\
               else setTimeout(poll, 10);\n\
             };\n\
             poll();",
            Vec::new(),
        )
        .await?;
    Ok(v.as_f64().unwrap_or(-1.0))
}

/// Saves a screenshot once the window has painted what the DOM shows.
async fn shot(client: &Client, name: &str, saved: &mut Vec<String>) -> TestResult {
    client
        .execute_async(
            "const done = arguments[arguments.length - 1];\n\
             window.scrollTo(0, 0);\n\
             requestAnimationFrame(() => requestAnimationFrame(() => done()));",
            Vec::new(),
        )
        .await?;
    let png = client.screenshot().await?;
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{name}: not a PNG");
    let dir = artifacts_dir();
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("e2e-{name}.png"));
    std::fs::write(&path, png)?;
    eprintln!("[{:>5.0} s] screenshot {}", elapsed(), path.display());
    saved.push(name.to_string());
    Ok(())
}

static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

fn elapsed() -> f64 {
    START.get_or_init(Instant::now).elapsed().as_secs_f64()
}

fn step(what: &str) {
    eprintln!("[{:>5.0} s] {what}", elapsed());
}

/// Nothing injected ran, and no payload became an element anywhere in the page.
async fn assert_nothing_ran(client: &Client, where_: &str) -> TestResult {
    let pwned = js(client, "return String(window.__pwned);").await?;
    assert_eq!(pwned, "undefined", "{where_}: a payload ran ({pwned})");
    let injected = js(
        client,
        "return String(document.querySelectorAll('body script, img[onerror], [onerror]').length);",
    )
    .await?;
    assert_eq!(injected, "0", "{where_}: a payload became an element");
    Ok(())
}

async fn flow(client: &Client, fixtures: &Path, saved: &mut Vec<String>) -> TestResult {
    // Room for the three panels in the screenshots (the X screen is 1280×1024).
    client.set_window_size(1280, 960).await?;
    // First run: the models are there, the setup screen lists them.
    step("setup screen");
    click(client, "#nav-setup").await?;
    wait_text(client, "#model-status", UI_TIMEOUT, |t| {
        t.contains("present")
    })
    .await?;
    wait_text(client, "#models-table", UI_TIMEOUT, |t| {
        t.contains("smollm2-135m-instruct")
    })
    .await?;
    shot(client, "setup", saved).await?;

    // Import: the export folder (one good file, one broken), then the documents.
    step("import history");
    click(client, "#nav-import").await?;
    fill(
        client,
        "#import-path",
        &fixtures.join("export").display().to_string(),
    )
    .await?;
    click(client, "#import-run").await?;
    let report = wait_text(client, "#import-report", UI_TIMEOUT, |t| {
        t.contains("old/conversations.json") || t.contains("old\\conversations.json")
    })
    .await?;
    assert!(report.to_lowercase().contains("failed"), "{report}");
    assert!(
        report.contains("imported") || report.contains("Imported"),
        "{report}"
    );
    step("import documents");
    fill(
        client,
        "#docs-path",
        &fixtures.join("docs").display().to_string(),
    )
    .await?;
    click(client, "#docs-run").await?;
    wait_text(client, "#import-report", UI_TIMEOUT, |t| {
        t.contains("3 added") || t.contains("added: 3") || t.contains("Added 3")
    })
    .await?;
    shot(client, "import", saved).await?;
    assert_nothing_ran(client, "import").await?;

    // History: search, open the session with payloads, check it shows them as text.
    step("history");
    click(client, "#nav-history").await?;
    fill(client, "#history-query", "green tea tin").await?;
    click(client, "#history-search").await?;
    wait_text(client, ".history-hit", UI_TIMEOUT, |t| {
        t.contains("<script>")
    })
    .await?;
    js(
        client,
        "const hit = [...document.querySelectorAll('.history-hit')].find(h => h.textContent.includes('<script>')); hit.click(); return 'ok';",
    )
    .await?;
    let session = wait_text(client, "#history-session", UI_TIMEOUT, |t| {
        t.contains("onerror")
    })
    .await?;
    assert!(session.contains(PAYLOAD_IMG), "{session}");
    assert_nothing_ran(client, "history").await?;
    shot(client, "history", saved).await?;

    // Settings: the web toggle says what would leave the machine.
    step("settings");
    click(client, "#nav-settings").await?;
    let disclosure = wait_text(client, "#settings-web-disclosure", UI_TIMEOUT, |t| {
        !t.is_empty()
    })
    .await?;
    assert!(disclosure.contains("SearxNG"), "{disclosure}");
    shot(client, "settings", saved).await?;

    // Research: depth 1, breadth 2, C0 = 0.
    step("research: start");
    click(client, "#nav-research").await?;
    fill(client, "#research-question", QUESTION).await?;
    fill(client, "#research-depth", "1").await?;
    fill(client, "#research-breadth", "2").await?;
    fill(client, "#research-c0", "0").await?;
    // Documents only: with the profile SmolLM2 writes from this history in its prompts, its
    // root proposes no follow-ups, and there would be no directions to choose from.
    js(
        client,
        "const h = document.getElementById('research-use-history'); if (h.checked) h.click(); \
         const d = document.getElementById('research-use-docs'); if (!d.checked) d.click(); \
         return 'ok';",
    )
    .await?;
    click(client, "#research-start").await?;

    step("research: pause");
    wait_present(client, ".pause-direction", MODEL_TIMEOUT).await?;
    let directions = client.find_all(Locator::Css(".pause-direction")).await?;
    assert!(!directions.is_empty());
    let pick = if directions.len() >= 2 { 2 } else { 1 };
    directions[pick - 1].click().await?;
    fill(client, "#pause-new", NEW_QUESTION).await?;
    shot(client, "research-pause", saved).await?;
    click(client, "#pause-send").await?;

    step("research: steer");
    fill(client, "#steer-input", STEERING).await?;
    click(client, "#steer-send").await?;
    wait_text(client, "#todo", MODEL_TIMEOUT, |t| {
        t.contains("water temperature")
    })
    .await?;
    shot(client, "research-steered", saved).await?;

    step("research: the window answers while the run goes on");
    let ms = navigation_ms(client).await?;
    eprintln!("navigation to Sessions during the run: {ms:.0} ms");
    assert!(
        (0.0..1000.0).contains(&ms),
        "the Sessions screen listed the session after {ms:.0} ms (-1: not within 10 s)"
    );
    click(client, "#nav-research").await?;

    step("research: report");
    wait_present(client, "#open-report", MODEL_TIMEOUT).await?;
    let tree = find(client, "#tree").await?.text().await?;
    assert!(tree.contains("ΔEV"), "the tree says why it paused: {tree}");
    let done = js(
        client,
        "return String(document.querySelectorAll('#tree .tree-node[data-status=\"done\"]').length);",
    )
    .await?;
    assert!(done.parse::<usize>()? >= 3, "{done} nodes done");
    let persona = find(client, "#persona").await?.text().await?;
    assert!(!persona.trim().is_empty());
    assert_nothing_ran(client, "research").await?;
    shot(client, "research", saved).await?;

    click(client, "#open-report").await?;
    let title = wait_text(client, "#report-title", UI_TIMEOUT, |t| {
        !t.trim().is_empty()
    })
    .await?;
    wait_text(client, "#report-references", UI_TIMEOUT, |t| {
        !t.trim().is_empty()
    })
    .await?;
    let scripts = js(
        client,
        "return String(document.querySelectorAll('#report-body script').length);",
    )
    .await?;
    assert_eq!(scripts, "0");
    // A citation opens its source.
    js(
        client,
        "const a = document.querySelector('#report-body a[href^=\"#ref-\"]') || \
         document.querySelector('#report-references a, #report-references button, #report-references li'); \
         a.click(); return 'ok';",
    )
    .await?;
    wait_text(client, "#source-view", UI_TIMEOUT, |t| t.trim().len() > 20).await?;
    assert_nothing_ran(client, "report").await?;
    shot(client, "report", saved).await?;
    eprintln!("report: {title}");

    step("sessions");
    click(client, "#nav-sessions").await?;
    wait_text(client, ".session-row", UI_TIMEOUT, |t| {
        t.contains("finished")
    })
    .await?;
    shot(client, "sessions", saved).await?;
    assert_nothing_ran(client, "sessions").await?;

    // After the steered research (whose prompts are those SmolLM2 pauses on, with nothing
    // the user said in them), the You screen: what Rudder infers for the question (SmolLM2 finds little in three short chats:
    // its phrases copy the prompt's example and are refused) and the standing constraints
    // from the custom instructions; one corrected, one statement added.
    step("you: see what Rudder infers");
    click(client, "#nav-you").await?;
    let standing = wait_text(client, "#you-standing", UI_TIMEOUT, |t| {
        t.contains(CORRECTED)
    })
    .await?;
    assert!(
        standing.contains("chatgpt custom instructions"),
        "{standing}"
    );
    fill(client, "#you-build-query", QUESTION).await?;
    click(client, "#you-build").await?;
    let profile = wait_text(client, ".you-profile", MODEL_TIMEOUT, |t| {
        t.contains(QUESTION)
    })
    .await?;
    assert!(
        profile.contains(CORRECTED),
        "every profile carries the standing constraints: {profile}"
    );
    let corrected = CORRECTED.to_string();
    step("you: correct one statement and add one");
    js(
        client,
        "const li = [...document.querySelectorAll('#you-standing .you-statement')] \
           .find(li => li.querySelector('.you-text').textContent === 'I work night shifts as a nurse.'); \
         li.querySelector('.you-correct').click(); return 'ok';",
    )
    .await?;
    let editor = find(client, ".you-correct-text").await?;
    editor.clear().await?;
    editor.send_keys(CORRECTION).await?;
    click(client, ".you-correct-save").await?;
    wait_text(client, "#you-said", UI_TIMEOUT, |t| t.contains(CORRECTION)).await?;
    fill(client, "#you-say-text", STATEMENT).await?;
    click(client, "#you-say-add").await?;
    wait_text(client, "#you-said", UI_TIMEOUT, |t| t.contains(STATEMENT)).await?;
    let hidden = find(client, "#you-hidden").await?.text().await?;
    assert!(hidden.contains(corrected.trim()), "{hidden}");
    let profile = find(client, ".you-profile").await?.text().await?;
    assert!(
        profile.contains(CORRECTION) && profile.contains("you said"),
        "{profile}"
    );
    assert!(!profile.contains(CORRECTED), "{profile}");
    step("you: read the history into memory");
    let unread = find(client, "#you-memory-unread").await?.text().await?;
    assert!(unread.contains("not read yet"), "{unread}");
    click(client, "#you-remember").await?;
    wait_text(client, "#you-memory-unread", MODEL_TIMEOUT, |t| {
        t.contains("All of your history is read")
    })
    .await?;
    assert_nothing_ran(client, "you").await?;
    shot(client, "you", saved).await?;

    // A research on the same question, with history: the persona it is seeded with carries
    // the user's words, not the statement they corrected. It is stopped once seeded.
    step("research with history: the persona carries what the user said");
    click(client, "#nav-research").await?;
    click(client, "#research-new").await?;
    fill(client, "#research-question", QUESTION).await?;
    js(
        client,
        "const h = document.getElementById('research-use-history'); if (!h.checked) h.click(); \
         return 'ok';",
    )
    .await?;
    click(client, "#research-start").await?;
    let persona = wait_text(client, "#persona", MODEL_TIMEOUT, |t| t.contains(STATEMENT)).await?;
    assert!(persona.contains(CORRECTION), "{persona}");
    assert!(
        !persona.contains(corrected.trim()),
        "the corrected statement is gone: {persona}"
    );
    // It stops at its next step boundary; the screens below need not wait for it.
    click(client, "#research-stop").await?;

    // Every main screen at the sizes people use: no sideways scrolling of the page (a wide
    // table scrolls inside its own box) and no header broken inside a word.
    for (width, height) in SIZES {
        client.set_window_size(width, height).await?;
        for screen in [
            "setup", "import", "history", "you", "research", "sessions", "settings",
        ] {
            step(&format!("{width}×{height}: {screen}"));
            click(client, &format!("#nav-{screen}")).await?;
            wait_present(
                client,
                &format!("#screen-{screen}:not([hidden])"),
                UI_TIMEOUT,
            )
            .await?;
            let overflow = js(
                client,
                "const d = document.documentElement; \
                 const broken = [...document.querySelectorAll('section.screen:not([hidden]) th:not(.sr-only), section.screen:not([hidden]) h2, section.screen:not([hidden]) h3')] \
                   .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent); \
                 return JSON.stringify({ page: d.scrollWidth - d.clientWidth, broken });",
            )
            .await?;
            let v: serde_json::Value = serde_json::from_str(&overflow)?;
            assert!(
                v["page"].as_i64().unwrap_or(0) <= 0,
                "{screen} at {width}×{height} scrolls sideways: {overflow}"
            );
            assert_eq!(v["broken"], json!([]), "{screen} at {width}×{height}");
            shot(client, &format!("{width}x{height}-{screen}"), saved).await?;
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs tauri-driver, WebKitWebDriver, an X display and the test models; run scripts/e2e.sh"]
async fn import_research_steer_and_report_in_the_real_window() {
    START.get_or_init(Instant::now);
    let models = std::env::var_os("RUDDER_TEST_MODELS_DIR")
        .map(std::path::PathBuf::from)
        .expect("set RUDDER_TEST_MODELS_DIR to the test models (scripts/test.sh fetches them)");
    let data_dir = tempfile::tempdir().unwrap();
    let fixtures = tempfile::tempdir().unwrap();
    write_history_export(&fixtures.path().join("export"));
    write_documents(&fixtures.path().join("docs"));
    write_settings(data_dir.path());

    // The app runs under strace, with home and temp folders of its own that must stay empty:
    // the privacy promise holds for the window too.
    strace::require();
    let sandbox = tempfile::tempdir().unwrap();
    let sandbox_path = std::fs::canonicalize(sandbox.path()).unwrap();
    let (home, tmp) = (sandbox_path.join("home"), sandbox_path.join("tmp"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let trace_log = sandbox_path.join("app.strace");
    let app = traced_app(&sandbox_path, &trace_log, &strace::strace_args());
    let data_path = std::fs::canonicalize(data_dir.path()).unwrap();

    let driver = Driver::start(&[
        ("RUDDER_DATA_DIR", data_path.as_os_str()),
        ("RUDDER_MODELS_DIR", models.as_os_str()),
        // Greedy decoding is reproducible only if the prompts see the same date.
        ("RUDDER_DATE", "2026-11-22".as_ref()),
        ("HOME", home.as_os_str()),
        ("TMPDIR", tmp.as_os_str()),
        // For the WebDriver processes (not traced): they would write GLib's dconf cache into
        // the sandboxed home. The app sets this itself (see `keep_platform_caches_in`).
        ("GSETTINGS_BACKEND", "memory".as_ref()),
    ]);
    let client = connect_app(&driver, &app).await;
    let mut saved = Vec::new();
    let result = flow(&client, fixtures.path(), &mut saved).await;
    if result.is_err() {
        let _ = shot(&client, "failure", &mut saved).await;
    }
    close(client).await;
    drop(driver);
    result.expect("the desktop flow");
    check_trace(&trace_log, &data_path, &[&home, &tmp]);

    // The engine's own record agrees with what the window did.
    let store =
        SessionStore::open(&data_dir.path().join("sessions").join("sessions.sqlite")).unwrap();
    let sessions = store.list().unwrap();
    assert_eq!(
        sessions.len(),
        2,
        "the steered research and the one with history"
    );
    let first = sessions.iter().min_by_key(|s| s.id).unwrap();
    let events = store.events(first.id).unwrap();
    let answer = events
        .iter()
        .find_map(|e| match &e.event {
            Event::Answer { answer, .. } => Some(answer.clone()),
            _ => None,
        })
        .expect("the pause was answered");
    assert!(!answer.chosen.is_empty());
    assert_eq!(answer.new_questions, [NEW_QUESTION]);
    let steered = events.iter().any(|e| {
        matches!(&e.event, Event::SteeringApplied { messages, .. }
            if messages.iter().any(|m| m.text == STEERING))
    });
    assert!(steered, "the steering message was applied");
    assert!(events
        .iter()
        .any(|e| matches!(e.event, Event::ReportWritten { .. })));
    eprintln!(
        "e2e flow: {} screenshots ({}) in {:.0} s",
        saved.len(),
        saved.join(", "),
        elapsed()
    );
    for name in [
        "setup",
        "import",
        "history",
        "settings",
        "research-pause",
        "research",
        "report",
        "sessions",
        "you",
        "960x680-you",
        "960x680-sessions",
        "1440x900-research",
    ] {
        assert!(saved.iter().any(|s| s == name), "no screenshot of {name}");
    }
}
