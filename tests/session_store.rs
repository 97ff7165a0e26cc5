//! The research session store: the event log round trip, contiguous seqs, exactly-once
//! steering under threads and processes, finishing only when nothing is pending, and errors
//! that name what is wrong instead of panicking.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use chrono::Utc;
use rudder::research::events::{Envelope, Event};
use rudder::session::store::{SessionError, SessionStatus, SessionStore, SteeringMessage};

/// What [`another_process_enqueues`] tells its child process ([`child_enqueue`]): `<db
/// path>:<session id>`.
const CHILD_ENV: &str = "RUDDER_SESSION_CHILD";

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("sessions").join("sessions.sqlite")
}

fn node(seq: u64) -> Envelope {
    Envelope {
        seq,
        at: Utc::now(),
        event: Event::NodeStarted { id: seq as usize },
    }
}

fn section(seq: u64, heading: &str) -> Envelope {
    Envelope {
        seq,
        at: Utc::now(),
        event: Event::ReportSection {
            index: seq as usize,
            heading: heading.to_string(),
        },
    }
}

#[test]
fn round_trip_list_info_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let config = serde_json::json!({"depth": 3, "breadth": 2, "sources": ["docs", "wiki"]});
    let mut store = SessionStore::open(&path).unwrap();
    assert_eq!(store.path(), path);
    let first = store.create("why is the sky blue", &config).unwrap();
    let second = store.create("tides", &serde_json::Value::Null).unwrap();

    let step_one = vec![node(0), node(1)];
    let step_two = vec![section(2, "Rayleigh scattering")];
    store.append(first, &step_one, &[]).unwrap();
    store.append(first, &step_two, &[]).unwrap();
    store.append(first, &[], &[]).unwrap();
    store
        .enqueue_steering(first, "  focus on sunsets  ")
        .unwrap();
    store.set_title(first, "The blue sky").unwrap();

    let expected: Vec<Envelope> = step_one.into_iter().chain(step_two).collect();
    drop(store);
    let store = SessionStore::open(&path).unwrap();
    assert_eq!(store.events(first).unwrap(), expected);
    assert_eq!(store.events_from(first, 2).unwrap(), expected[2..]);
    assert_eq!(store.event_count(first).unwrap(), 3);
    assert_eq!(store.event_count(second).unwrap(), 0);
    assert!(store.events(second).unwrap().is_empty());
    assert_eq!(store.config(first).unwrap(), config);
    assert_eq!(store.config(second).unwrap(), serde_json::Value::Null);

    let info = store.info(first).unwrap();
    assert_eq!(info.id, first);
    assert_eq!(info.query, "why is the sky blue");
    assert_eq!(info.status, SessionStatus::Running);
    assert_eq!(info.events, 3);
    assert_eq!(info.pending_steering, 1);
    assert_eq!(info.title.as_deref(), Some("The blue sky"));
    assert!(info.updated_at >= info.created_at);
    assert_eq!(
        store.pending_steering(first).unwrap()[0].text,
        "focus on sunsets"
    );

    let list = store.list().unwrap();
    let ids: Vec<i64> = list.iter().map(|s| s.id).collect();
    assert_eq!(ids, [second, first], "newest first");
    assert_eq!((list[0].events, list[0].pending_steering), (0, 0));
    assert_eq!(list[0].title, None);

    store
        .set_status(second, SessionStatus::Interrupted)
        .unwrap();
    assert_eq!(
        store.info(second).unwrap().status,
        SessionStatus::Interrupted
    );
    let json = serde_json::to_value(store.info(second).unwrap()).unwrap();
    assert_eq!(json["status"], "interrupted");
}

#[test]
fn a_gap_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SessionStore::open(&db(&dir)).unwrap();
    let id = store.create("q", &serde_json::json!({})).unwrap();
    store.append(id, &[node(0), node(1)], &[]).unwrap();
    let updated = store.info(id).unwrap().updated_at;

    for (events, expected, got) in [
        (vec![node(3)], 2, 3),
        (vec![node(1)], 2, 1),
        (vec![node(2), node(4)], 3, 4),
        (vec![node(2), node(2)], 3, 2),
    ] {
        let err = store.append(id, &events, &[]).unwrap_err();
        assert!(
            matches!(err, SessionError::Gap { session, expected: e, got: g }
                if session == id && e == expected && g == got),
            "{err:?}"
        );
        let err = store.finish(id, &events, &[]).unwrap_err();
        assert!(matches!(err, SessionError::Gap { .. }), "{err:?}");
    }
    assert_eq!(store.event_count(id).unwrap(), 2);
    assert_eq!(store.events(id).unwrap().len(), 2);
    let info = store.info(id).unwrap();
    assert_eq!(info.updated_at, updated);
    assert_eq!(info.status, SessionStatus::Running);
    store.append(id, &[node(2)], &[]).unwrap();
    assert_eq!(store.event_count(id).unwrap(), 3);
}

#[test]
fn a_message_is_applied_once_and_only_by_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SessionStore::open(&db(&dir)).unwrap();
    let id = store.create("q", &serde_json::json!({})).unwrap();
    let other = store.create("other", &serde_json::json!({})).unwrap();
    let a = store.enqueue_steering(id, "more on costs").unwrap();
    let b = store.enqueue_steering(id, "skip history").unwrap();
    let foreign = store.enqueue_steering(other, "not yours").unwrap();

    store.append(id, &[node(0), node(1)], &[a.id]).unwrap();
    let applied = store.steering(id).unwrap();
    assert_eq!(applied[0].applied_seq, Some(1), "the step's last event");
    assert_eq!(applied[1].applied_seq, None);

    // Every refused step carries events, which are rolled back with it.
    let err = store.append(id, &[node(2)], &[b.id, a.id]).unwrap_err();
    assert!(
        matches!(err, SessionError::AlreadyApplied { session, message, seq: 1 }
            if session == id && message == a.id),
        "{err:?}"
    );
    let err = store.append(id, &[node(2)], &[b.id, b.id]).unwrap_err();
    assert!(
        matches!(err, SessionError::AlreadyApplied { message, seq: 2, .. } if message == b.id),
        "a duplicate within one step: {err:?}"
    );
    let err = store.append(id, &[node(2)], &[foreign.id]).unwrap_err();
    assert!(
        matches!(err, SessionError::UnknownSteering { session, message }
            if session == id && message == foreign.id),
        "{err:?}"
    );
    let err = store.append(id, &[node(2)], &[9999]).unwrap_err();
    assert!(
        matches!(err, SessionError::UnknownSteering { .. }),
        "{err:?}"
    );
    let err = store.append(id, &[], &[b.id]).unwrap_err();
    assert!(
        matches!(err, SessionError::AppliedWithoutEvents { .. }),
        "{err:?}"
    );
    let err = store.finish(id, &[node(2)], &[b.id, a.id]).unwrap_err();
    assert!(
        matches!(err, SessionError::AlreadyApplied { .. }),
        "{err:?}"
    );

    assert_eq!(store.event_count(id).unwrap(), 2);
    assert_eq!(store.steering(id).unwrap(), applied);
    assert_eq!(
        store.pending_steering(id).unwrap(),
        std::slice::from_ref(&b)
    );
    assert_eq!(store.pending_steering(other).unwrap(), [foreign]);
    assert_eq!(store.info(id).unwrap().status, SessionStatus::Running);

    store.append(id, &[node(2)], &[b.id]).unwrap();
    assert!(store.pending_steering(id).unwrap().is_empty());
    assert_eq!(store.steering(id).unwrap()[1].applied_seq, Some(2));
}

/// A deterministic xorshift, for jitter without another dependency.
fn jitter(state: &mut u64) -> Duration {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    Duration::from_micros(*state % 2_000)
}

#[test]
fn concurrent_steering_is_applied_exactly_once() {
    const THREADS: usize = 8;
    const EACH: usize = 25;
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let mut store = SessionStore::open(&path).unwrap();
    let id = store.create("q", &serde_json::json!({})).unwrap();

    let start = Arc::new(Barrier::new(THREADS));
    let writers: Vec<_> = (0..THREADS)
        .map(|t| {
            let path = path.clone();
            let start = start.clone();
            std::thread::spawn(move || {
                let store = SessionStore::open(&path).unwrap();
                let mut state = 0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1);
                start.wait();
                (0..EACH)
                    .map(|i| {
                        std::thread::sleep(jitter(&mut state));
                        store.enqueue_steering(id, &format!("{t}:{i}")).unwrap()
                    })
                    .collect::<Vec<SteeringMessage>>()
            })
        })
        .collect();

    // The runner: each step applies whatever is pending when it starts.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut applied_by: HashMap<i64, u64> = HashMap::new();
    let mut seq = 0;
    let mut steps = 0;
    while applied_by.len() < THREADS * EACH {
        assert!(Instant::now() < deadline, "{} applied", applied_by.len());
        let pending = store.pending_steering(id).unwrap();
        if pending.is_empty() {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        let ids: Vec<i64> = pending.iter().map(|m| m.id).collect();
        store.append(id, &[node(seq)], &ids).unwrap();
        for m in ids {
            assert!(applied_by.insert(m, seq).is_none(), "{m} applied twice");
        }
        seq += 1;
        steps += 1;
    }
    let sent: Vec<Vec<SteeringMessage>> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    eprintln!("{} messages applied in {steps} steps", applied_by.len());

    let stored = store.steering(id).unwrap();
    assert_eq!(stored.len(), THREADS * EACH);
    assert!(store.pending_steering(id).unwrap().is_empty());
    assert_eq!(store.event_count(id).unwrap(), seq);
    for m in &stored {
        assert_eq!(m.applied_seq, Some(applied_by[&m.id]), "{m:?}");
    }
    let sent_ids: BTreeSet<i64> = sent.iter().flatten().map(|m| m.id).collect();
    let stored_ids: BTreeSet<i64> = stored.iter().map(|m| m.id).collect();
    let applied_ids: BTreeSet<i64> = applied_by.keys().copied().collect();
    assert_eq!(sent_ids.len(), THREADS * EACH, "ids are unique");
    assert_eq!(sent_ids, stored_ids, "none lost, none invented");
    assert_eq!(sent_ids, applied_ids);

    // Received order: id order agrees with time order, and each thread's messages are in the
    // order it sent them.
    for pair in stored.windows(2) {
        assert!(pair[0].id < pair[1].id);
        assert!(pair[0].received_at <= pair[1].received_at, "{pair:?}");
    }
    let by_id: HashMap<i64, &SteeringMessage> = stored.iter().map(|m| (m.id, m)).collect();
    for (t, messages) in sent.iter().enumerate() {
        for (i, m) in messages.iter().enumerate() {
            assert_eq!(m.text, format!("{t}:{i}"));
            assert_eq!(by_id[&m.id].text, m.text);
            assert_eq!(by_id[&m.id].received_at, m.received_at);
        }
        assert!(messages.windows(2).all(|p| p[0].id < p[1].id));
    }
}

#[test]
fn finish_waits_for_pending_steering() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let mut store = SessionStore::open(&path).unwrap();
    let other = SessionStore::open(&path).unwrap();
    let id = store.create("q", &serde_json::json!({})).unwrap();
    store.append(id, &[node(0)], &[]).unwrap();
    let late = other.enqueue_steering(id, "one more thing").unwrap();

    assert!(!store.finish(id, &[section(1, "Summary")], &[]).unwrap());
    assert_eq!(store.event_count(id).unwrap(), 1, "nothing written");
    assert_eq!(store.info(id).unwrap().status, SessionStatus::Running);
    assert_eq!(
        store.pending_steering(id).unwrap(),
        std::slice::from_ref(&late)
    );
    let err = store.set_status(id, SessionStatus::Finished).unwrap_err();
    assert!(
        matches!(err, SessionError::PendingSteering { pending: 1, .. }),
        "{err:?}"
    );

    assert!(store
        .finish(id, &[section(1, "Summary")], &[late.id])
        .unwrap());
    let info = store.info(id).unwrap();
    assert_eq!(info.status, SessionStatus::Finished);
    assert_eq!((info.events, info.pending_steering), (2, 0));
    assert_eq!(store.steering(id).unwrap()[0].applied_seq, Some(1));

    let err = other.enqueue_steering(id, "too late").unwrap_err();
    assert!(
        matches!(err, SessionError::Finished(s) if s == id),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("research session {id} has already finished; start a new one")
    );
    assert!(matches!(
        store.append(id, &[node(2)], &[]),
        Err(SessionError::Finished(_))
    ));
    assert!(matches!(
        store.finish(id, &[], &[]),
        Err(SessionError::Finished(_))
    ));
    assert!(matches!(
        store.set_status(id, SessionStatus::Running),
        Err(SessionError::Finished(_))
    ));
    store.set_status(id, SessionStatus::Finished).unwrap();
    store.set_title(id, "Still titled at the end").unwrap();
    assert_eq!(store.steering(id).unwrap().len(), 1);
    assert_eq!(store.event_count(id).unwrap(), 2);

    // Finishing with nothing pending needs no step at all.
    let quiet = store.create("quiet", &serde_json::json!({})).unwrap();
    assert!(store.finish(quiet, &[], &[]).unwrap());
}

/// The child side of [`another_process_enqueues`], which runs it in a second process; ignored
/// in a normal test run rather than passing without doing anything.
#[test]
#[ignore = "the second process of another_process_enqueues, which starts it"]
fn child_enqueue() {
    let spec = std::env::var(CHILD_ENV)
        .unwrap_or_else(|_| panic!("{CHILD_ENV} is unset: another_process_enqueues runs this"));
    let (path, id) = spec.rsplit_once(':').expect("<db path>:<session id>");
    let id: i64 = id.parse().expect("a session id");
    let store = SessionStore::open(Path::new(path)).unwrap();
    for i in 0..20 {
        store
            .enqueue_steering(id, &format!("from the child {i}"))
            .unwrap();
    }
    println!("child enqueued 20");
}

#[test]
fn another_process_enqueues() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let store = SessionStore::open(&path).unwrap();
    let id = store.create("q", &serde_json::json!({})).unwrap();

    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_enqueue", "--ignored", "--nocapture"])
        .env(CHILD_ENV, format!("{}:{id}", path.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("child enqueued 20"),
        "the child ran: {stdout}"
    );

    let pending = store.pending_steering(id).unwrap();
    assert_eq!(pending.len(), 20);
    for (i, m) in pending.iter().enumerate() {
        assert_eq!(m.text, format!("from the child {i}"));
        assert_eq!(m.session, id);
    }
    assert_eq!(store.info(id).unwrap().pending_steering, 20);
}

#[test]
fn first_opens_from_many_threads_migrate_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let start = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let (path, start) = (path.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let store = SessionStore::open(&path).unwrap();
                store
                    .create(&format!("q{i}"), &serde_json::json!(i))
                    .unwrap()
            })
        })
        .collect();
    let ids: BTreeSet<i64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let store = SessionStore::open(&path).unwrap();
    let listed: BTreeSet<i64> = store.list().unwrap().iter().map(|s| s.id).collect();
    assert_eq!(ids.len(), 8);
    assert_eq!(ids, listed);
}

#[test]
fn bad_input_and_bad_data_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let mut store = SessionStore::open(&path).unwrap();
    let id = store.create("q", &serde_json::json!({})).unwrap();
    store.append(id, &[node(0), node(1), node(2)], &[]).unwrap();

    let missing = id + 100;
    assert!(matches!(store.info(missing), Err(SessionError::NotFound(m)) if m == missing));
    assert!(matches!(
        store.events(missing),
        Err(SessionError::NotFound(_))
    ));
    assert!(matches!(
        store.config(missing),
        Err(SessionError::NotFound(_))
    ));
    assert!(matches!(
        store.append(missing, &[node(0)], &[]),
        Err(SessionError::NotFound(_))
    ));
    assert!(matches!(
        store.enqueue_steering(missing, "hi"),
        Err(SessionError::NotFound(_))
    ));
    assert!(matches!(
        store.pending_steering(missing),
        Err(SessionError::NotFound(_))
    ));
    assert!(matches!(
        store.delete(missing),
        Err(SessionError::NotFound(_))
    ));
    assert!(matches!(
        store.enqueue_steering(id, " \n\t "),
        Err(SessionError::EmptyMessage)
    ));
    assert!(store.steering(id).unwrap().is_empty());

    // Damage event 1 behind the store's back: reading names the file, session and seq.
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute(
        "UPDATE events SET body = '{\"seq\": 1, \"at\": \"not a time\"' WHERE session = ?1 AND seq = 1",
        [id],
    )
    .unwrap();
    let err = store.events(id).unwrap_err();
    assert!(
        matches!(&err, SessionError::Corrupt { session, seq: 1, .. } if *session == id),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(
        text.contains(&format!("research session {id}, event 1")),
        "{text}"
    );

    // An event from an unknown future variant, and one filed under the wrong seq.
    let future =
        serde_json::json!({"seq": 1, "at": Utc::now(), "event": {"type": "from_the_future"}});
    raw.execute(
        "UPDATE events SET body = ?2 WHERE session = ?1 AND seq = 1",
        rusqlite::params![id, future.to_string()],
    )
    .unwrap();
    assert!(matches!(
        store.events(id),
        Err(SessionError::Corrupt { seq: 1, .. })
    ));
    let misfiled = serde_json::to_string(&node(7)).unwrap();
    raw.execute(
        "UPDATE events SET body = ?2 WHERE session = ?1 AND seq = 1",
        rusqlite::params![id, misfiled],
    )
    .unwrap();
    assert!(matches!(
        store.events(id),
        Err(SessionError::Corrupt { seq: 1, .. })
    ));
    assert_eq!(
        store.events_from(id, 2).unwrap().len(),
        1,
        "later events still read"
    );
    // The stored type column serves listings without parsing bodies.
    let kind: String = raw
        .query_row(
            "SELECT type FROM events WHERE session = ?1 AND seq = 0",
            [id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(kind, "node_started");

    raw.execute("UPDATE sessions SET config = 'nope' WHERE id = ?1", [id])
        .unwrap();
    assert!(matches!(
        store.config(id),
        Err(SessionError::CorruptSession { .. })
    ));

    // A newer schema is refused rather than misread.
    raw.pragma_update(None, "user_version", 99).unwrap();
    drop(raw);
    let err = SessionStore::open(&path).err().unwrap();
    assert!(
        matches!(err, SessionError::NewerSchema { found: 99, .. }),
        "{err:?}"
    );
}

#[test]
fn delete_takes_events_and_steering_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let mut store = SessionStore::open(&path).unwrap();
    let gone = store.create("gone", &serde_json::json!({})).unwrap();
    let kept = store.create("kept", &serde_json::json!({})).unwrap();
    let m = store.enqueue_steering(gone, "applied").unwrap();
    store.append(gone, &[node(0)], &[m.id]).unwrap();
    store.enqueue_steering(gone, "pending").unwrap();
    store.append(kept, &[node(0)], &[]).unwrap();

    store.delete(gone).unwrap();
    assert!(matches!(store.info(gone), Err(SessionError::NotFound(_))));
    assert_eq!(store.list().unwrap().len(), 1);
    assert_eq!(store.event_count(kept).unwrap(), 1);
    let raw = rusqlite::Connection::open(&path).unwrap();
    let rows: i64 = raw
        .query_row(
            "SELECT (SELECT COUNT(*) FROM events WHERE session = ?1)
                  + (SELECT COUNT(*) FROM steering WHERE session = ?1)",
            [gone],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 0);
    // Ids are never reused, so a stale reference cannot reach a new session.
    let next = store.create("next", &serde_json::json!({})).unwrap();
    assert!(next > kept);
}
