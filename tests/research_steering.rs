//! Steering, the todo plan, reflection, clarification and persisted sessions, with a scripted
//! model (the real-model runs are in `research_real.rs`): every node is a task; steering
//! messages sent at any moment — from other threads, and queued in SQLite — are applied
//! exactly once; exclusions hold for retrieval, planning and the report; reflection turns
//! knowledge gaps into tasks; and a run killed with SIGKILL at any point resumes to the same
//! tree and report structure.

use rudder_testkit::scripted;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use rudder::clarify::ClarifyAnswer;
use rudder::research::events::{Collect, Envelope, Stage};
use rudder::research::interaction::ScriptedClarification;
use rudder::research::Journal;
use rudder::research::{
    Brief, Event, Interaction, MemoryJournal, NeverAsk, Origin, Outcome, PauseAnswer, Provenance,
    ResearchSettings, ResearchState, Researcher, Scripted, TaskStatus,
};
use rudder::session::{SessionConfig, SessionLog, SessionStatus, SessionStore};
use rudder::sources::Sources;
use scripted::{stable_number, BagOfWords, MemorySource, ScriptedLlm};
use serde_json::json;

fn settings(depth: u32, breadth: u32) -> ResearchSettings {
    ResearchSettings {
        depth,
        breadth,
        clarify_turns: 0,
        ..ResearchSettings::default()
    }
}

fn brief() -> Brief {
    Brief {
        query: "How should I brew tea?".into(),
        persona_text: "A home cook who likes tea.".into(),
        ..Brief::default()
    }
}

fn run_with(
    llm: &ScriptedLlm,
    settings: ResearchSettings,
    interaction: &mut dyn Interaction,
    journal: &mut dyn Journal,
    log: &[Envelope],
) -> (Outcome, Vec<Envelope>) {
    run_over(
        MemorySource::tea(),
        llm,
        settings,
        interaction,
        journal,
        log,
    )
}

fn run_over(
    source: MemorySource,
    llm: &ScriptedLlm,
    settings: ResearchSettings,
    interaction: &mut dyn Interaction,
    journal: &mut dyn Journal,
    log: &[Envelope],
) -> (Outcome, Vec<Envelope>) {
    let mut sources = Sources::new();
    sources.push(Box::new(source));
    let mut events = Collect::default();
    let outcome = Researcher {
        llm,
        embedder: &BagOfWords,
        sources: &mut sources,
        interaction,
        events: &mut events,
        journal,
        settings,
        embed_model: "bag-of-words".into(),
    }
    .resume(&brief(), log)
    .unwrap();
    (outcome, events.0)
}

fn steering_applied(events: &[Envelope]) -> Vec<(u64, Vec<i64>)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::SteeringApplied { messages, .. } => {
                Some((e.seq, messages.iter().map(|m| m.id).collect()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn every_node_is_a_task_of_the_plan() {
    let llm = ScriptedLlm::new();
    let mut journal = MemoryJournal::new();
    let (outcome, events) = run_with(&llm, settings(2, 2), &mut NeverAsk, &mut journal, &[]);
    let todo = &outcome.todo;
    assert_eq!(todo.tasks.len(), outcome.tree.nodes.len());
    for node in &outcome.tree.nodes {
        let task = todo.for_node(node.id).expect("a task per node");
        assert_eq!(task.status, TaskStatus::Completed, "{task:?}");
        assert!((5..=10).contains(&task.priority));
        assert_eq!(task.text, node.question);
    }
    let root = todo.for_node(0).unwrap();
    assert_eq!(root.provenance, Provenance::InitialQuery);
    assert_eq!(root.priority, 9);
    // The version counts every change: each task was added, started and completed.
    let changes = events
        .iter()
        .filter(|e| matches!(e.event, Event::TaskAdded { .. } | Event::TaskUpdated { .. }))
        .count() as u64;
    assert_eq!(todo.version, changes);
    assert_eq!(todo.version, 3 * todo.tasks.len() as u64);
    // Breadth first: all of level 1 is researched before anything of level 2.
    let started: Vec<u32> = events
        .iter()
        .filter_map(|e| match e.event {
            Event::NodeStarted { id } => Some(outcome.tree.nodes[id].depth),
            _ => None,
        })
        .collect();
    assert!(started.windows(2).all(|w| w[0] <= w[1]), "{started:?}");
    let md = todo.render_markdown("How should I brew tea?");
    for t in &todo.tasks {
        assert!(md.contains(&format!("**#{}**", t.id)), "{md}");
    }
    // The committed log folds into the same state the run ended with.
    let folded = ResearchState::fold(&journal.events());
    assert_eq!(folded.tree, outcome.tree);
    assert_eq!(folded.todo, outcome.todo);
    assert_eq!(folded.report.as_ref(), Some(&outcome.report));
    assert!(folded.finished);
}

#[test]
fn steering_excludes_adds_and_focuses() {
    let llm = ScriptedLlm::new();
    let mut journal = MemoryJournal::new();
    journal
        .steer("Ignore poems. Also look into tea chemistry")
        .unwrap();
    journal.steer("focus on brewing temperature").unwrap();
    let (outcome, events) = run_with(&llm, settings(2, 2), &mut NeverAsk, &mut journal, &[]);

    // Both messages were applied together, in one reflection, before any research.
    let applied = steering_applied(&events);
    assert_eq!(applied.len(), 1, "{applied:?}");
    assert_eq!(applied[0].1, vec![1, 2]);
    let first_research = events
        .iter()
        .position(|e| matches!(e.event, Event::NodeStarted { .. }))
        .unwrap();
    let applied_at = events
        .iter()
        .position(|e| matches!(e.event, Event::SteeringApplied { .. }))
        .unwrap();
    assert!(applied_at < first_research);
    assert_eq!(outcome.directives.exclusions, ["poems"]);
    assert_eq!(outcome.directives.focus, ["brewing temperature"]);

    // Nothing about poems was retrieved, planned or reported (the culture passage and the
    // planner's wild card are about poems).
    for e in outcome.evidence.values() {
        assert!(!e.text.to_lowercase().contains("poems"), "{e:?}");
    }
    for n in &outcome.tree.nodes {
        assert!(
            !n.question.to_lowercase().contains("poems"),
            "{}",
            n.question
        );
    }
    assert!(!outcome.report.markdown.to_lowercase().contains("poems"));

    // The requested topic is a steering task with the top priority, researched first.
    let task = outcome
        .todo
        .tasks
        .iter()
        .find(|t| t.provenance == Provenance::Steering)
        .expect("a steering task");
    assert_eq!(task.text, "tea chemistry");
    assert_eq!(task.priority, 10);
    assert_eq!(task.status, TaskStatus::Completed);
    let node = &outcome.tree.nodes[task.node];
    assert_eq!(node.origin, Origin::Steering);
    assert!(node.children.is_empty(), "steering nodes are not expanded");
    // The node read the passage on its topic, and what that passage says is learned: here by
    // the root already, which quotes the passages its learnings leave unread, so the steering
    // node finds nothing new in it.
    assert!(
        node.evidence
            .iter()
            .any(|k| outcome.evidence[k].text.contains("catechins")),
        "{:?}",
        node.evidence
    );
    assert!(outcome
        .learnings
        .iter()
        .any(|l| l.text.contains("catechins")));
    // Focus ranks passages about brewing (temperature) first.
    let root_evidence = &outcome.tree.nodes[0].evidence;
    let first = &outcome.evidence[&root_evidence[0]];
    assert!(first.text.contains("brewing"), "{first:?}");
    assert!(outcome.directives.focus_score(&first.text) > 0);
}

#[test]
fn a_message_that_arrives_during_reflection_waits_for_the_next() {
    let journal = MemoryJournal::new();
    let late = journal.clone();
    let mut llm = ScriptedLlm::new();
    let sent = std::sync::atomic::AtomicBool::new(false);
    llm.reflect = Some(Box::new(move |prompt: &str| {
        if prompt.contains("USER STEERING MESSAGES")
            && !sent.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            late.steer("also look into tea markets").unwrap();
        }
        json!({"steering_summary": "noted"})
    }));
    let mut run_journal = journal.clone();
    run_journal.steer("focus on cost").unwrap();
    let (outcome, events) = run_with(&llm, settings(1, 2), &mut NeverAsk, &mut run_journal, &[]);
    let applied = steering_applied(&events);
    assert_eq!(applied.len(), 2, "{applied:?}");
    assert_eq!(applied[0].1, vec![1]);
    assert_eq!(applied[1].1, vec![2]);
    assert!(outcome
        .todo
        .tasks
        .iter()
        .any(|t| t.text == "tea markets" && t.provenance == Provenance::Steering));
    assert!(journal.steering().iter().all(|(_, seq)| seq.is_some()));
}

/// The ids of every pending task a reflection prompt shows.
fn pending_ids(prompt: &str) -> Vec<usize> {
    prompt
        .lines()
        .filter_map(|l| l.strip_prefix("- id "))
        .filter_map(|l| l.split(' ').next()?.parse().ok())
        .collect()
}

#[test]
fn reflection_cannot_cancel_a_task_no_learning_covers() {
    let mut llm = ScriptedLlm::new();
    // The model calls every pending task obsolete.
    llm.reflect = Some(Box::new(
        |prompt: &str| json!({"cancel_tasks": pending_ids(prompt)}),
    ));
    let (outcome, events) = run_with(
        &llm,
        settings(2, 2),
        &mut NeverAsk,
        &mut MemoryJournal::new(),
        &[],
    );
    let proposed = events
        .iter()
        .any(|e| matches!(&e.event, Event::Reflected { .. }));
    assert!(proposed && llm.count("reflect") >= 1);
    assert!(outcome.todo.tasks.len() > 3);
    assert!(
        outcome
            .todo
            .tasks
            .iter()
            .all(|t| t.status == TaskStatus::Completed),
        "{:?}",
        outcome.todo.tasks
    );
}

#[test]
fn reflection_adds_knowledge_gaps_and_cancels_obsolete_tasks() {
    let mut llm = ScriptedLlm::new();
    let calls = std::sync::atomic::AtomicUsize::new(0);
    llm.reflect = Some(Box::new(move |prompt: &str| {
        // Cancel the first pending task shown (canceled only because what was learned already
        // answers it); name one gap per level.
        let first_pending: Vec<usize> = pending_ids(prompt).into_iter().take(1).collect();
        // The second reflection rephrases the first one's gap: the same need, not a new task.
        let gap = if calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            "How does water hardness change how I brew tea?"
        } else {
            "How does the water hardness change how I brew tea?"
        };
        json!({
            "cancel_tasks": first_pending,
            "knowledge_gaps": [gap],
        })
    }));
    // The root's first passage answers one task planned below the first direction, its own
    // brewing question (the scripted model numbers a node's follow-ups by its question).
    let direction = format!(
        "How does brewing shape the tea I brew {}?",
        stable_number("How should I brew tea?")
    );
    let mut source = MemorySource::tea();
    source.0.insert(
        0,
        (
            "Tea growers".to_string(),
            format!(
                "Brewing does shape the tea I brew {}, say growers in Japanese valleys.",
                stable_number(&direction)
            ),
        ),
    );
    let (outcome, events) = run_over(
        source,
        &llm,
        settings(2, 2),
        &mut NeverAsk,
        &mut MemoryJournal::new(),
        &[],
    );
    let reflected: Vec<Option<u32>> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Reflected { level, .. } => Some(*level),
            _ => None,
        })
        .collect();
    assert_eq!(reflected, [Some(1), Some(2)]);
    let gaps: Vec<_> = outcome
        .todo
        .tasks
        .iter()
        .filter(|t| t.provenance == Provenance::KnowledgeGap)
        .collect();
    // The same gap, reworded, is not added twice.
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].priority, 7);
    assert_eq!(gaps[0].status, TaskStatus::Completed);
    let gap_node = &outcome.tree.nodes[gaps[0].node];
    assert_eq!(gap_node.origin, Origin::Gap);
    assert_eq!(gap_node.depth, 2);
    // The task canceled after level 1 was never researched.
    let canceled: Vec<_> = outcome
        .todo
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Canceled)
        .collect();
    assert_eq!(canceled.len(), 1, "{canceled:?}");
    let node = canceled[0].node;
    assert!(!events
        .iter()
        .any(|e| matches!(e.event, Event::NodeStarted { id } if id == node)));
    assert_eq!(
        outcome.tree.nodes[node].status,
        rudder::research::tree::Status::Canceled
    );
}

#[test]
fn clarification_refines_the_brief_and_seeds_the_checklist() {
    let llm = ScriptedLlm::new();
    let mut interaction = Scripted::new(Vec::new()).with_clarifications(vec![
        ScriptedClarification::Reply("2".into()),
        ScriptedClarification::Reply("under 10 euros a month".into()),
        ScriptedClarification::Reply("skip".into()),
    ]);
    let mut s = settings(1, 2);
    s.clarify_turns = 3;
    let (outcome, events) = run_with(&llm, s, &mut interaction, &mut MemoryJournal::new(), &[]);
    let asked: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ClarifyAsked { question, .. } => Some(question.question.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert_ne!(asked[0], asked[1]);
    let answers: Vec<&ClarifyAnswer> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ClarifyAnswered { answer, .. } => Some(answer),
            _ => None,
        })
        .collect();
    assert_eq!(answers[0].choices, [2]);
    assert!(answers[2].skip);
    let refined = events
        .iter()
        .find_map(|e| match &e.event {
            Event::BriefRefined { brief, turns, .. } => Some((brief.clone(), *turns)),
            _ => None,
        })
        .unwrap();
    assert_eq!(refined.1, 3);
    // The brief goes into the persona and its checklist replaces the inferred one.
    assert!(
        outcome.persona.text.contains("for guests"),
        "{}",
        outcome.persona.text
    );
    assert_eq!(
        outcome.persona.checklist,
        ["Covers brewing for guests", "Covers the cost of tea"]
    );
    assert_eq!(llm.count("checklist"), 0);
    assert_eq!(llm.count("clarify"), 3);
    assert_eq!(llm.count("clarify_summary"), 1);
}

/// Messages sent from several threads at random moments of a run persisted in SQLite: each
/// is applied exactly once, none is lost, and the store and the log agree.
#[test]
fn concurrent_steering_messages_are_each_applied_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.sqlite");
    let config = SessionConfig {
        brief: brief(),
        settings: settings(2, 2),
        ..SessionConfig::default()
    };
    let mut journal = SessionLog::create(SessionStore::open(&db).unwrap(), &config).unwrap();
    let id = journal.id;
    let mut llm = ScriptedLlm::new();
    llm.delay = Duration::from_millis(15);
    let texts = [
        "focus on brewing temperature",
        "also look into tea markets",
        "ignore poems",
        "prioritise safety",
        "what about green tea",
        "keep it short please",
    ];
    let accepted = std::sync::Mutex::new(Vec::new());
    let refused = std::sync::Mutex::new(0usize);
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let (db, accepted, refused) = (&db, &accepted, &refused);
            scope.spawn(move || {
                let store = SessionStore::open(db).unwrap();
                // A fixed pseudo-random schedule per thread.
                let mut x = 0x9e3779b97f4a7c15u64.wrapping_mul(t + 1);
                for i in 0..5 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    std::thread::sleep(Duration::from_millis(x % 120));
                    let text = format!("{} ({t}.{i})", texts[(x % 6) as usize]);
                    match store.enqueue_steering(id, &text) {
                        Ok(m) => accepted.lock().unwrap().push(m.id),
                        Err(rudder::session::SessionError::Finished(_)) => {
                            *refused.lock().unwrap() += 1
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
        let (outcome, _) = run_with(&llm, settings(2, 2), &mut NeverAsk, &mut journal, &[]);
        assert!(!outcome.report.sections.is_empty());
    });
    let accepted = accepted.into_inner().unwrap();
    let store = SessionStore::open(&db).unwrap();
    let log = store.events(id).unwrap();
    let applied = steering_applied(&log);
    let mut seen: BTreeMap<i64, u64> = BTreeMap::new();
    for (seq, ids) in &applied {
        for m in ids {
            assert!(seen.insert(*m, *seq).is_none(), "message {m} applied twice");
        }
    }
    let mut expected = accepted.clone();
    expected.sort();
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        expected,
        "lost messages"
    );
    assert!(accepted.len() >= 10, "most messages arrive during the run");
    // The store marks each with the step that applied it.
    for m in store.steering(id).unwrap() {
        let seq = m.applied_seq.expect("applied");
        assert!(seq >= seen[&m.id], "{m:?}");
    }
    assert_eq!(store.info(id).unwrap().status, SessionStatus::Finished);
    eprintln!(
        "{} messages accepted and applied exactly once in {} reflections, {} refused after the end",
        accepted.len(),
        applied.len(),
        refused.into_inner().unwrap()
    );
}

// --- SIGKILL at any point, then resume -------------------------------------------------------

const CHILD_ENV: &str = "RUDDER_KILL_CHILD";

fn kill_config() -> SessionConfig {
    let mut s = settings(2, 3);
    // Pause at the root (and maybe later), so answers are part of what must survive.
    s.pause.base_cost = 0.0;
    s.weights.lambda_explore = 0.1;
    s.weights.lambda_info = 0.1;
    SessionConfig {
        brief: brief(),
        settings: s,
        ..SessionConfig::default()
    }
}

/// A new session in `db` with a steering message already queued, so applying it is part of
/// what a kill can interrupt.
fn new_kill_session(db: &Path) -> i64 {
    let store = SessionStore::open(db).unwrap();
    let id = SessionLog::create(store, &kill_config()).unwrap().id;
    SessionStore::open(db)
        .unwrap()
        .enqueue_steering(id, "also look into tea markets; ignore poems")
        .unwrap();
    id
}

fn kill_interaction() -> Scripted {
    Scripted::new(vec![
        PauseAnswer::parse("1\nNew follow-up questions:\nHow do I store tea?"),
        PauseAnswer::parse("2"),
        PauseAnswer::parse("1, 2"),
    ])
}

fn kill_llm() -> ScriptedLlm {
    ScriptedLlm::new()
}

/// Runs (or resumes) session `id` in `db` to its end.
fn drive(db: &Path, id: i64) -> Outcome {
    drive_freezing(db, id, None)
}

/// A session log that freezes the model once `after` events are committed, so the process
/// is inside a step (in a model call) when the parent kills it.
struct Freezing {
    log: SessionLog,
    after: u64,
    gate: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Journal for Freezing {
    fn commit(
        &mut self,
        events: &[Envelope],
        applied: &[i64],
    ) -> Result<(), rudder::research::ResearchError> {
        self.log.commit(events, applied)?;
        if events.last().is_some_and(|e| e.seq + 1 >= self.after) {
            self.gate.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(())
    }
    fn pending_steering(
        &mut self,
    ) -> Result<Vec<rudder::research::steering::Message>, rudder::research::ResearchError> {
        self.log.pending_steering()
    }
    fn finish(
        &mut self,
        events: &[Envelope],
        applied: &[i64],
    ) -> Result<bool, rudder::research::ResearchError> {
        self.log.finish(events, applied)
    }
}

fn drive_freezing(db: &Path, id: i64, freeze_after: Option<u64>) -> Outcome {
    let store = SessionStore::open(db).unwrap();
    let journal = SessionLog::new(store, id);
    let config = journal.config().unwrap();
    let log = journal.store.events(id).unwrap();
    let mut llm = kill_llm();
    let mut interaction = kill_interaction();
    match freeze_after {
        None => {
            let mut journal = journal;
            run_with(&llm, config.settings, &mut interaction, &mut journal, &log).0
        }
        Some(after) => {
            let gate = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            llm.freeze = Some(gate.clone());
            let mut journal = Freezing {
                log: journal,
                after,
                gate,
            };
            run_with(&llm, config.settings, &mut interaction, &mut journal, &log).0
        }
    }
}

/// The child process of the kill test: runs the session named in the environment. Ignored
/// in normal runs; the parent starts it with `--ignored`.
#[test]
#[ignore = "started by sigkill_at_any_point_resumes_to_the_same_tree_and_report"]
fn kill_child() {
    let spec = std::env::var(CHILD_ENV).expect("run by the kill test");
    let (rest, after) = spec.rsplit_once(':').unwrap();
    let (db, id) = rest.rsplit_once(':').unwrap();
    drive_freezing(
        Path::new(db),
        id.parse().unwrap(),
        Some(after.parse().unwrap()),
    );
}

/// The structure that must survive: each node's parent, depth, question, origin and status;
/// each task's text, provenance and status; the report's headings and references.
fn structure(o: &Outcome) -> serde_json::Value {
    json!({
        "nodes": o.tree.nodes.iter().map(|n| json!([n.parent, n.depth, n.question, n.origin, n.status, n.learnings.len()])).collect::<Vec<_>>(),
        "tasks": o.todo.tasks.iter().map(|t| json!([t.text, t.provenance, t.status, t.priority])).collect::<Vec<_>>(),
        "sections": o.report.sections.iter().map(|s| s.heading.clone()).collect::<Vec<_>>(),
        "references": o.report.references.len(),
        "pauses": o.pauses,
        "persona": o.persona.checklist,
    })
}

#[cfg(unix)]
#[test]
fn sigkill_at_any_point_resumes_to_the_same_tree_and_report() {
    let dir = tempfile::tempdir().unwrap();
    // The uninterrupted run.
    let reference_db = dir.path().join("reference.sqlite");
    let reference_id = new_kill_session(&reference_db);
    let reference = drive(&reference_db, reference_id);
    let total = SessionStore::open(&reference_db)
        .unwrap()
        .event_count(reference_id)
        .unwrap();
    assert!(reference
        .todo
        .tasks
        .iter()
        .any(|t| t.provenance == Provenance::Steering));
    assert!(
        reference.pauses >= 1,
        "the run pauses, so answers must survive"
    );
    assert!(total > 40, "{total} events");

    // The report step's events commit together: the count stays at its first event's seq
    // while the sections are being written. Its first event is the cost of judging the
    // reader's needs when there are some, else its first section.
    let report_step = SessionStore::open(&reference_db)
        .unwrap()
        .events(reference_id)
        .unwrap()
        .iter()
        .find(|e| {
            matches!(
                e.event,
                Event::ReportSection { .. }
                    | Event::Usage {
                        stage: Stage::Report,
                        ..
                    }
            )
        })
        .unwrap()
        .seq;
    // Kill points spread over the run: while applying the steering message, mid-research,
    // around the pause, late research, and while writing the report.
    let points = [
        3,
        total / 5,
        total * 2 / 5,
        total * 3 / 5,
        total * 4 / 5,
        report_step,
    ];
    let mut results = Vec::new();
    for (k, &point) in points.iter().enumerate() {
        let db = dir.path().join(format!("kill{k}.sqlite"));
        let id = new_kill_session(&db);
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "kill_child", "--nocapture"])
            .env(CHILD_ENV, format!("{}:{id}:{point}", db.display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let watch = SessionStore::open(&db).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let mut seen = 0;
        while std::time::Instant::now() < deadline {
            seen = watch.event_count(id).unwrap();
            if seen >= point {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        // SIGKILL: no destructor, no flush, mid-step.
        child.kill().unwrap();
        child.wait().unwrap();
        let at_kill = watch.event_count(id).unwrap();
        assert_ne!(
            watch.info(id).unwrap().status,
            SessionStatus::Finished,
            "kill point {k} (event {point}, saw {seen}, {at_kill} at kill, total {total}) came too late"
        );
        let resumed = drive(&db, id);
        assert_eq!(resumed.resumed_at, at_kill);
        assert_eq!(
            structure(&resumed),
            structure(&reference),
            "kill point {k} at event {at_kill}"
        );
        // The log has no gaps and ends finished.
        let log = watch.events(id).unwrap();
        assert!(log.iter().enumerate().all(|(i, e)| e.seq == i as u64));
        assert_eq!(watch.info(id).unwrap().status, SessionStatus::Finished);
        results.push((k, point, seen, at_kill, log.len()));
    }
    for (k, point, seen, at_kill, len) in results {
        eprintln!(
            "kill {k}: aimed at event {point}, saw {seen}, killed with {at_kill} committed; resumed to {len} events (reference {total})"
        );
    }
}

/// A window's view of the loop: events arrive on a channel, clarifying and pause questions
/// are answered on another, and a steering message goes in meanwhile — the way the desktop
/// shell drives a run.
#[test]
fn a_window_answers_and_steers_through_channels() {
    let llm = ScriptedLlm::new();
    let journal = MemoryJournal::new();
    let window_journal = journal.clone();
    let (mut interaction, replies) = rudder::app::interaction::ChannelInteraction::new();
    let (events_tx, events_rx) = std::sync::mpsc::channel::<Envelope>();
    let mut s = kill_config().settings;
    s.clarify_turns = 2;
    let outcome = std::thread::scope(|scope| {
        let runner = scope.spawn(move || {
            let mut sources = Sources::new();
            sources.push(Box::new(MemorySource::tea()));
            let mut sink = move |e: &Envelope| {
                let _ = events_tx.send(e.clone());
            };
            let mut journal = journal;
            Researcher {
                llm: &llm,
                embedder: &BagOfWords,
                sources: &mut sources,
                interaction: &mut interaction,
                events: &mut sink,
                journal: &mut journal,
                settings: s,
                embed_model: "bag-of-words".into(),
            }
            .run(&brief())
        });
        let mut steered = false;
        for e in events_rx.iter() {
            match &e.event {
                Event::ClarifyAsked { question, .. } => {
                    let answer = if question.turn == 1 {
                        ClarifyAnswer::parse("2", question)
                    } else {
                        ClarifyAnswer::parse("skip", question)
                    };
                    replies
                        .send(rudder::app::interaction::Reply::Clarify(answer))
                        .unwrap();
                }
                Event::Question { .. } => {
                    replies
                        .send(rudder::app::interaction::Reply::Pause(PauseAnswer::parse(
                            "1",
                        )))
                        .unwrap();
                }
                Event::NodeResearched { .. } if !steered => {
                    window_journal.steer("ignore poems").unwrap();
                    steered = true;
                }
                _ => {}
            }
        }
        runner.join().unwrap().unwrap()
    });
    assert!(outcome.pauses >= 1);
    assert_eq!(outcome.directives.exclusions, ["poems"]);
    let state = ResearchState::fold(&window_journal.events());
    assert_eq!(state.clarify_turns.len(), 2);
    assert_eq!(state.clarify_turns[0].answer.choices, [2]);
    assert!(state.clarify_turns[1].answer.skip);
    assert_eq!(state.tree, outcome.tree);
}
