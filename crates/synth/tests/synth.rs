//! The synthetic history generator (`rudder_synth`): determinism, exact counts, the
//! real export shapes (Takeout My Activity JSON, ChatGPT `conversations.json` with its mapping
//! tree, Claude `conversations.json`), and a round trip through the real importers that must
//! give back exactly the sessions `synth::sessions` yields.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rudder::history::import::{
    collect, detect_from, parse_file, Detected, Format, ImportError, InputFile,
};
use rudder::history::{Entry, HistorySource, Kind, Record, SignalKind};
use rudder_synth::{self as synth, Mix, SynthConfig, SynthSummary};
use serde_json::Value;

fn write(cfg: &SynthConfig) -> (tempfile::TempDir, SynthSummary) {
    let dir = tempfile::tempdir().unwrap();
    let summary = synth::write_export(cfg, dir.path()).unwrap();
    (dir, summary)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn file(summary: &SynthSummary, format: Format) -> &synth::SynthFile {
    summary
        .files
        .iter()
        .find(|f| f.format == format)
        .unwrap_or_else(|| panic!("no {format} file in {summary:?}"))
}

fn cfg(seed: u64, sessions: usize) -> SynthConfig {
    SynthConfig::new(seed, sessions)
}

#[test]
fn same_seed_gives_byte_identical_files() {
    let c = cfg(42, 1500);
    let (a, sa) = write(&c);
    let (b, sb) = write(&c);
    assert_eq!(sa.counts, sb.counts);
    for rel in [
        synth::TAKEOUT_SEARCH_PATH,
        synth::CHATGPT_PATH,
        synth::CLAUDE_PATH,
    ] {
        let x = fs::read(a.path().join(rel)).unwrap();
        let y = fs::read(b.path().join(rel)).unwrap();
        assert!(!x.is_empty());
        assert!(x == y, "{rel} differs between two runs with the same seed");
    }
}

#[test]
fn different_seed_gives_different_files_and_person() {
    let (a, _) = write(&cfg(1, 500));
    let (b, _) = write(&cfg(2, 500));
    for rel in [synth::TAKEOUT_SEARCH_PATH, synth::CHATGPT_PATH] {
        assert_ne!(
            fs::read(a.path().join(rel)).unwrap(),
            fs::read(b.path().join(rel)).unwrap(),
            "{rel}"
        );
    }
    let people: HashSet<Vec<&str>> = (0..8)
        .map(|s| synth::persona(&cfg(s, 10)).interests)
        .collect();
    assert!(
        people.len() >= 6,
        "seeds should give different interests: {people:?}"
    );
}

#[test]
fn counts_match_the_config_and_the_files() {
    let mut c = cfg(7, 2000);
    c.mix = Mix {
        search: 0.5,
        visit: 0.3,
        chat: 0.2,
    };
    c.claude_share = 0.3;
    let (dir, summary) = write(&c);
    let want = c.counts();
    assert_eq!(summary.counts, want);
    assert_eq!(summary.total_sessions(), 2000);
    assert_eq!((want.searches, want.visits, want.chats), (1000, 600, 400));
    assert_eq!((want.chatgpt_chats, want.claude_chats), (280, 120));
    assert!(
        (60..=160).contains(&summary.noise),
        "noise {}",
        summary.noise
    );

    let takeout = read_json(&dir.path().join(synth::TAKEOUT_SEARCH_PATH));
    let items = takeout.as_array().unwrap();
    assert_eq!(items.len(), want.searches + want.visits);
    let searched = items
        .iter()
        .filter(|i| i["title"].as_str().unwrap().starts_with("Searched for "))
        .count();
    assert_eq!(searched, want.searches);
    assert_eq!(
        read_json(&dir.path().join(synth::CHATGPT_PATH))
            .as_array()
            .unwrap()
            .len(),
        want.chatgpt_chats
    );
    assert_eq!(
        read_json(&dir.path().join(synth::CLAUDE_PATH))
            .as_array()
            .unwrap()
            .len(),
        want.claude_chats
    );

    for f in &summary.files {
        assert_eq!(
            f.bytes,
            fs::metadata(&f.path).unwrap().len(),
            "{}",
            f.path.display()
        );
        assert!(f.path.starts_with(dir.path()));
    }
    assert_eq!(
        file(&summary, Format::TakeoutSearch).sessions,
        want.searches + want.visits
    );
    assert_eq!(file(&summary, Format::Chatgpt).sessions, want.chatgpt_chats);
    assert_eq!(file(&summary, Format::Claude).sessions, want.claude_chats);

    // The in-memory sessions are the same logical sessions.
    let mut kinds: HashMap<Kind, usize> = HashMap::new();
    for s in synth::sessions(&c) {
        *kinds.entry(s.kind).or_default() += 1;
    }
    assert_eq!(kinds[&Kind::Search], want.searches);
    assert_eq!(kinds[&Kind::Visit], want.visits);
    assert_eq!(kinds[&Kind::Chat], want.chats);
}

#[test]
fn no_claude_file_without_claude_chats() {
    let mut c = cfg(3, 300);
    c.claude_share = 0.0;
    let (dir, summary) = write(&c);
    assert_eq!(summary.counts.claude_chats, 0);
    assert!(!dir.path().join(synth::CLAUDE_PATH).exists());
    assert_eq!(summary.files.len(), 2);
}

#[test]
fn takeout_has_the_my_activity_shape() {
    let c = cfg(5, 3000);
    let (dir, summary) = write(&c);
    let path = dir.path().join(synth::TAKEOUT_SEARCH_PATH);
    let raw = fs::read_to_string(&path).unwrap();

    // Laid out like Takeout: `[{\n  "header": …\n},{\n …}]`, with Gson's escapes.
    assert!(raw.starts_with("[{\n  \""), "{}", &raw[..40]);
    assert!(raw.ends_with("\n}]"));
    assert!(raw.contains("\n},{\n"));
    assert!(raw.contains("\"products\": [\"Search\"]"));
    assert!(raw.contains("\"activityControls\": [\"Web \\u0026 App Activity\"]"));
    assert!(raw.contains("search?q\\u003d"));
    assert!(raw.contains("url?q\\u003dhttps://"));
    assert!(raw.contains("\\u0026usg\\u003dAOvVaw"));
    assert!(
        !raw.contains("?q="),
        "a raw `=` slipped through Gson escaping"
    );
    assert!(
        !raw.contains(" & "),
        "a raw `&` slipped through Gson escaping"
    );

    let start = c.start;
    let end = start + chrono::Duration::days(i64::from(c.days));
    let items = serde_json::from_str::<Value>(&raw).unwrap();
    let mut prev: Option<DateTime<Utc>> = None;
    let (mut visits, mut with_location, mut encoded_query) = (0, 0, 0);
    for item in items.as_array().unwrap() {
        let obj = item.as_object().unwrap();
        let title = obj["title"].as_str().unwrap();
        let url = obj["titleUrl"].as_str().unwrap();
        let time = obj["time"].as_str().unwrap();
        // Milliseconds and Z, like "2021-12-13T03:04:05.007Z".
        assert_eq!(time.len(), 24, "{time}");
        assert!(time.ends_with('Z') && time.as_bytes()[19] == b'.', "{time}");
        let t = DateTime::parse_from_rfc3339(time)
            .unwrap()
            .with_timezone(&Utc);
        assert!(t >= start && t < end, "{time} outside the window");
        if let Some(p) = prev {
            assert!(t <= p, "not newest first: {time} after {p}");
        }
        prev = Some(t);
        match obj.get("header") {
            Some(h) => assert_eq!(h, "Search"),
            None => panic!("only pre-2021 items may lack a header: {item}"),
        }
        assert_eq!(obj["products"], serde_json::json!(["Search"]));
        assert_eq!(
            obj["activityControls"],
            serde_json::json!(["Web & App Activity"])
        );
        if let Some(q) = title.strip_prefix("Searched for ") {
            assert!(!q.is_empty());
            assert!(url.starts_with("https://www.google.com/search?q="), "{url}");
            encoded_query += usize::from(url.contains('+'));
        } else {
            let page = title
                .strip_prefix("Visited ")
                .unwrap_or_else(|| panic!("{title}"));
            assert!(!page.is_empty());
            assert!(
                url.starts_with("https://www.google.com/url?q=https://"),
                "{url}"
            );
            assert!(url.contains("&usg=AOvVaw"), "{url}");
            visits += 1;
        }
        if let Some(loc) = obj.get("locationInfos") {
            with_location += 1;
            assert!(loc[0]["url"]
                .as_str()
                .unwrap()
                .starts_with("https://www.google.com/maps/"));
        }
        let keys: Vec<&String> = obj.keys().collect();
        for k in &keys {
            assert!(
                [
                    "header",
                    "title",
                    "titleUrl",
                    "time",
                    "products",
                    "activityControls",
                    "locationInfos"
                ]
                .contains(&k.as_str()),
                "unexpected key {k}"
            );
        }
    }
    assert_eq!(visits, summary.counts.visits);
    assert!(with_location > 0);
    assert!(encoded_query > 0);
}

#[test]
fn old_takeout_items_sometimes_lack_a_header() {
    let mut c = cfg(6, 600);
    c.start = "2019-06-01T00:00:00Z".parse().unwrap();
    c.days = 730;
    let (dir, _) = write(&c);
    let items = read_json(&dir.path().join(synth::TAKEOUT_SEARCH_PATH));
    let cutoff: DateTime<Utc> = "2021-01-01T00:00:00Z".parse().unwrap();
    let mut headerless = 0;
    for item in items.as_array().unwrap() {
        if item.get("header").is_none() {
            let t: DateTime<Utc> = item["time"].as_str().unwrap().parse().unwrap();
            assert!(t < cutoff, "a 2021+ item without header: {item}");
            headerless += 1;
        }
    }
    assert!(headerless > 0);
}

#[test]
fn chatgpt_has_the_conversations_shape() {
    let c = cfg(9, 4000);
    let (dir, summary) = write(&c);
    let convs = read_json(&dir.path().join(synth::CHATGPT_PATH));
    let convs = convs.as_array().unwrap();
    assert_eq!(convs.len(), summary.counts.chatgpt_chats);
    let (mut with_context, mut branched, mut regenerated, mut edited) = (0, 0, 0, 0);
    for conv in convs {
        let id = conv["id"].as_str().unwrap();
        assert_eq!(conv["conversation_id"], conv["id"]);
        assert!(!conv["title"].as_str().unwrap().is_empty());
        let created = conv["create_time"].as_f64().unwrap();
        let updated = conv["update_time"].as_f64().unwrap();
        assert!(created > 1.0e9 && updated >= created, "{id}");
        assert!(conv["default_model_slug"].is_string());
        let mapping = conv["mapping"].as_object().unwrap();

        // A consistent tree: ids match keys, children point back at their parent, one root.
        let mut roots = 0;
        for (key, node) in mapping {
            assert_eq!(node["id"].as_str().unwrap(), key);
            for child in node["children"].as_array().unwrap() {
                let child = &mapping[child.as_str().unwrap()];
                assert_eq!(child["parent"].as_str(), Some(key.as_str()));
            }
            if node["parent"].is_null() {
                roots += 1;
                assert!(node["message"].is_null(), "the root carries no message");
            }
            if node["children"].as_array().unwrap().len() > 1 {
                branched += 1;
                let first = &mapping[node["children"][0].as_str().unwrap()];
                match first["message"]["author"]["role"].as_str() {
                    Some("assistant") => regenerated += 1,
                    Some("user") => edited += 1,
                    other => panic!("unexpected branch {other:?}"),
                }
            }
        }
        assert_eq!(roots, 1, "{id}");

        // The thread the user saw: current_node up to the root.
        let mut thread = Vec::new();
        let mut at = conv["current_node"].as_str();
        while let Some(key) = at {
            let node = &mapping[key];
            thread.push(node);
            at = node["parent"].as_str();
            assert!(thread.len() <= mapping.len(), "cycle in {id}");
        }
        thread.reverse();
        assert!(thread[0]["message"].is_null());
        let mut visible = Vec::new();
        for node in &thread[1..] {
            let m = &node["message"];
            let hidden = m["metadata"]["is_visually_hidden_from_conversation"] == true;
            let kind = m["content"]["content_type"].as_str().unwrap();
            if kind == "user_editable_context" {
                assert!(hidden);
                assert!(m["create_time"].is_null());
                assert!(m["content"]["user_profile"]
                    .as_str()
                    .unwrap()
                    .contains("User profile:\n```"));
                assert!(m["content"]["user_instructions"].is_string());
                with_context += 1;
                continue;
            }
            if hidden {
                assert_eq!(m["author"]["role"], "system");
                continue;
            }
            assert_eq!(kind, "text");
            let parts = m["content"]["parts"].as_array().unwrap();
            assert_eq!(parts.len(), 1);
            assert!(!parts[0].as_str().unwrap().is_empty());
            assert!(m["create_time"].as_f64().unwrap() >= created);
            visible.push(m["author"]["role"].as_str().unwrap().to_string());
        }
        assert!((2..=12).contains(&visible.len()), "{id}: {visible:?}");
        for (i, role) in visible.iter().enumerate() {
            assert_eq!(role, if i % 2 == 0 { "user" } else { "assistant" }, "{id}");
        }
    }
    assert_eq!(with_context, summary.custom_instructions);
    assert!(
        with_context > 0 && with_context < convs.len(),
        "{with_context} of {}",
        convs.len()
    );
    assert!(regenerated > 0, "no regenerated answers");
    assert!(edited > 0, "no edited prompts");
    assert!(branched >= summary.branched);
}

#[test]
fn claude_has_the_conversations_shape() {
    let mut c = cfg(12, 4000);
    c.claude_share = 0.5;
    let (dir, summary) = write(&c);
    let convs = read_json(&dir.path().join(synth::CLAUDE_PATH));
    let convs = convs.as_array().unwrap();
    assert_eq!(convs.len(), summary.counts.claude_chats);
    let (mut same_time, mut out_of_order) = (0, 0);
    for conv in convs {
        for key in ["uuid", "name", "created_at", "updated_at"] {
            assert!(conv[key].is_string(), "{key} in {conv}");
        }
        assert!(conv["account"]["uuid"].is_string());
        let created = conv["created_at"].as_str().unwrap();
        // ISO-8601 with microseconds and Z.
        assert_eq!(created.len(), 27, "{created}");
        let messages = conv["chat_messages"].as_array().unwrap();
        assert!((2..=12).contains(&messages.len()));
        assert_eq!(messages[0]["created_at"], conv["created_at"]);
        let mut prev: Option<DateTime<Utc>> = None;
        for (i, m) in messages.iter().enumerate() {
            assert_eq!(m["sender"], if i % 2 == 0 { "human" } else { "assistant" });
            let text = m["text"].as_str().unwrap();
            assert_eq!(m["content"][0]["type"], "text");
            assert_eq!(m["content"][0]["text"], text);
            assert!(m["attachments"].as_array().unwrap().is_empty());
            let t: DateTime<Utc> = m["created_at"].as_str().unwrap().parse().unwrap();
            if let Some(p) = prev {
                same_time += usize::from(t == p && i % 2 == 1);
                out_of_order += usize::from(t < p);
            }
            prev = Some(t);
        }
    }
    assert!(same_time > 0, "no answer shares its prompt's time");
    assert!(out_of_order > 0, "no message out of time order");
}

#[test]
fn files_are_detected_plain_and_inside_a_zip() {
    let (dir, _) = write(&cfg(13, 400));
    let cases = [
        (synth::TAKEOUT_SEARCH_PATH, Format::TakeoutSearch),
        (synth::CHATGPT_PATH, Format::Chatgpt),
        (synth::CLAUDE_PATH, Format::Claude),
    ];
    for (rel, want) in cases {
        let head = fs::read(dir.path().join(rel)).unwrap();
        let head = &head[..head.len().min(256 << 10)];
        assert_eq!(detect_from(rel, head), Detected::Format(want), "{rel}");
    }

    let zip_path = dir.path().join("export.zip");
    let mut zip = zip::ZipWriter::new(fs::File::create(&zip_path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (rel, _) in cases {
        zip.start_file(rel, opts).unwrap();
        zip.write_all(&fs::read(dir.path().join(rel)).unwrap())
            .unwrap();
    }
    zip.finish().unwrap();
    let collected = collect(&[zip_path]);
    assert!(collected.refused.is_empty(), "{:?}", collected.refused);
    assert_eq!(collected.files.len(), 3);
    for f in &collected.files {
        let want = cases
            .iter()
            .find(|(rel, _)| *rel == f.inner_path())
            .unwrap()
            .1;
        let got = parse_file(f, None, &mut |_| Ok(())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got, want, "{}", f.display());
    }
}

struct Imported {
    sessions: Vec<Entry>,
    signals: Vec<String>,
}

fn import_all(paths: &[PathBuf]) -> Imported {
    let collected = collect(paths);
    assert!(collected.refused.is_empty(), "{:?}", collected.refused);
    let mut sessions = Vec::new();
    let mut signals = Vec::new();
    for f in &collected.files {
        parse_file(f, None, &mut |r| {
            match r {
                Record::Entry(s) => sessions.push(s),
                Record::Signal(s) => {
                    assert_eq!(
                        (s.source, s.kind),
                        (HistorySource::Chatgpt, SignalKind::CustomInstructions)
                    );
                    signals.push(s.text);
                }
                Record::Skipped { place, reason } => panic!("skipped {place}: {reason}"),
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
    Imported { sessions, signals }
}

/// Stable order for comparing: by source, then external id or time and title.
fn sorted(mut v: Vec<Entry>) -> Vec<Entry> {
    v.sort_by(|a, b| {
        (
            a.source,
            a.kind,
            &a.external_id,
            a.started_at,
            &a.title,
            &a.url,
        )
            .cmp(&(
                b.source,
                b.kind,
                &b.external_id,
                b.started_at,
                &b.title,
                &b.url,
            ))
    });
    v
}

#[test]
fn the_importers_read_back_exactly_the_generated_sessions() {
    let mut c = cfg(21, 3000);
    c.claude_share = 0.3;
    let (dir, summary) = write(&c);
    let imported = import_all(&[dir.path().to_path_buf()]);

    let count = |k: Kind| imported.sessions.iter().filter(|s| s.kind == k).count();
    assert_eq!(count(Kind::Search), summary.counts.searches);
    assert_eq!(count(Kind::Visit), summary.counts.visits);
    assert_eq!(count(Kind::Chat), summary.counts.chats);
    let from = |src: HistorySource| imported.sessions.iter().filter(|s| s.source == src).count();
    assert_eq!(from(HistorySource::Chatgpt), summary.counts.chatgpt_chats);
    assert_eq!(from(HistorySource::Claude), summary.counts.claude_chats);
    // The same custom instructions in every conversation that has them: one signal per file,
    // with the user's own words.
    assert!(summary.custom_instructions > 0);
    assert_eq!(imported.signals.len(), 1, "{:?}", imported.signals);
    let persona = synth::persona(&c);
    let (profile, how) = persona.custom_instructions();
    assert!(
        imported.signals[0].contains(&profile),
        "{:?} lacks {profile:?}",
        imported.signals[0]
    );
    assert!(
        imported.signals[0].contains(&how),
        "{:?} lacks {how:?}",
        imported.signals[0]
    );

    let got = sorted(imported.sessions);
    let want = sorted(synth::sessions(&c).collect());
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w, "imported session differs from the generated one");
    }
}

#[test]
fn several_users_get_their_own_exports() {
    let dir = tempfile::tempdir().unwrap();
    let summaries = synth::write_users(&cfg(1, 200), 3, dir.path()).unwrap();
    assert_eq!(summaries.len(), 3);
    for (i, s) in summaries.iter().enumerate() {
        assert_eq!(s.total_sessions(), 200);
        assert!(dir
            .path()
            .join(format!("user-{i:02}"))
            .join(synth::TAKEOUT_SEARCH_PATH)
            .exists());
    }
    assert_ne!(
        fs::read(dir.path().join("user-00").join(synth::CHATGPT_PATH)).unwrap(),
        fs::read(dir.path().join("user-01").join(synth::CHATGPT_PATH)).unwrap()
    );
}

#[test]
fn zero_days_is_a_config_error() {
    let mut c = cfg(1, 10);
    c.days = 0;
    let dir = tempfile::tempdir().unwrap();
    let err = synth::write_export(&c, dir.path()).unwrap_err();
    assert!(err.to_string().contains("days"), "{err}");
}

#[test]
fn an_empty_history_writes_empty_arrays() {
    let (dir, summary) = write(&cfg(1, 0));
    assert_eq!(summary.total_sessions(), 0);
    assert_eq!(
        fs::read_to_string(dir.path().join(synth::TAKEOUT_SEARCH_PATH)).unwrap(),
        "[]"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join(synth::CHATGPT_PATH)).unwrap(),
        "[]"
    );
}

/// 50k sessions, written and read back through serde_json, stay quick. Not timed here (the
/// debug build is several times slower than release); the figure is measured separately.
#[test]
fn fifty_thousand_sessions() {
    let (dir, summary) = write(&cfg(99, 50_000));
    assert_eq!(summary.total_sessions(), 50_000);
    let takeout = read_json(&dir.path().join(synth::TAKEOUT_SEARCH_PATH));
    assert_eq!(
        takeout.as_array().unwrap().len(),
        summary.counts.searches + summary.counts.visits
    );
}

#[test]
fn truncated_and_empty_exports_fail_or_import_nothing() {
    let (dir, _) = write(&cfg(31, 300));
    for rel in [
        synth::TAKEOUT_SEARCH_PATH,
        synth::CHATGPT_PATH,
        synth::CLAUDE_PATH,
    ] {
        let path = dir.path().join(rel);
        let bytes = fs::read(&path).unwrap();
        let cut = dir.path().join(format!("cut-{}", rel.replace('/', "-")));
        fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let format = detect_from(rel, &bytes[..bytes.len().min(4096)]);
        let Detected::Format(format) = format else {
            panic!("{rel}: {format:?}")
        };
        let err = parse_file(&InputFile::plain(&cut), Some(format), &mut |_| Ok(()))
            .expect_err("a truncated export must fail");
        let msg = err.to_string();
        assert!(msg.contains(&cut.display().to_string()), "{msg}");
        assert!(msg.contains("line"), "{msg}");
    }
    // `[]`: no records, or the "contains no history" error, from every file.
    let (dir, _) = write(&cfg(31, 0));
    let collected = collect(&[dir.path().to_path_buf()]);
    assert_eq!(collected.files.len(), 2);
    for f in &collected.files {
        let mut records = 0;
        match parse_file(f, None, &mut |_| {
            records += 1;
            Ok(())
        }) {
            Ok(_) | Err(ImportError::Empty { .. }) => {}
            Err(e) => panic!("{}: {e}", f.display()),
        }
        assert_eq!(records, 0, "{}", f.display());
    }
}
