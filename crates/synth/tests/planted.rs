//! The planted-needs users (`rudder_synth::planted`): the hard setting, the label structure,
//! determinism, and a round trip through the real importer that must store every labelled
//! session under the labelled hash.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rudder::history::import::{collect, parse_file};
use rudder::history::{Entry, History, ImportOptions, NoProgress, Record};
use rudder_synth::planted::{
    content_words, read_planted_set, session_text, write_planted_set, NeedKind, PlantedSet,
    LABELS_FILE,
};

const SEED: u64 = 7;

/// One set written once for the tests that only read it.
fn shared() -> &'static (tempfile::TempDir, PlantedSet) {
    static SET: OnceLock<(tempfile::TempDir, PlantedSet)> = OnceLock::new();
    SET.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let set = write_planted_set(SEED, dir.path()).unwrap();
        (dir, set)
    })
}

/// Every session of a user's export, parsed by the real importers, by content hash.
fn parsed(folder: &Path) -> HashMap<String, Entry> {
    let collected = collect(&[folder.to_path_buf()]);
    assert!(collected.refused.is_empty(), "{:?}", collected.refused);
    let mut out = HashMap::new();
    for f in &collected.files {
        parse_file(f, None, &mut |r| {
            match r {
                Record::Entry(s) => {
                    out.insert(s.content_hash(), s);
                }
                Record::Signal(_) => {}
                Record::Skipped { place, reason } => panic!("skipped {place}: {reason}"),
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
    out
}

#[test]
fn planted_sessions_share_at_most_one_content_word_with_their_question() {
    let (dir, set) = shared();
    let mut bad = Vec::new();
    for user in &set.users {
        let sessions = parsed(&dir.path().join(&user.export));
        for q in &user.questions {
            let qw = content_words(&q.query);
            for n in &q.needs {
                for h in &n.sessions {
                    let s = &sessions[h];
                    let text = session_text(s);
                    let shared: Vec<String> =
                        content_words(&text).intersection(&qw).cloned().collect();
                    if shared.len() > 1 {
                        bad.push(format!("{} {shared:?}: {text:?}", n.id));
                    }
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "planting sessions too close to their question:\n{}",
        bad.join("\n")
    );
}

#[test]
fn planted_labels_have_the_promised_structure() {
    let (_, set) = shared();
    assert_eq!(set.users.len(), 8);
    let mut ids = HashSet::new();
    let mut kinds = Vec::new();
    let mut planting = HashSet::new();
    for (i, user) in set.users.iter().enumerate() {
        assert_eq!(user.id, format!("u{i}"));
        assert!(!user.description.is_empty() && !user.name.is_empty());
        assert!((2..=3).contains(&user.questions.len()), "{}", user.id);
        for (qi, q) in user.questions.iter().enumerate() {
            assert_eq!(q.id, format!("{}-q{qi}", user.id));
            assert!((4..=6).contains(&q.needs.len()), "{}", q.id);
            assert!(q.distractors.len() >= q.needs.len(), "{}", q.id);
            for (ni, n) in q.needs.iter().enumerate() {
                assert_eq!(n.id, format!("{}-n{ni}", q.id));
                assert!(ids.insert(n.id.clone()), "duplicate need id {}", n.id);
                kinds.push(n.kind);
                assert!((1..=3).contains(&n.sessions.len()), "{}", n.id);
                assert!((1..=4).contains(&n.specifics.len()), "{}", n.id);
                assert!(n.addressing.len() >= 4, "{} addressing", n.id);
                assert!(n.mentioning.len() >= 4, "{} mentioning", n.id);
                for h in &n.sessions {
                    assert!(planting.insert(h.clone()), "{}: session {h} shared", n.id);
                }
            }
        }
    }
    for k in [
        NeedKind::Constraint,
        NeedKind::Preference,
        NeedKind::Background,
        NeedKind::Tone,
    ] {
        assert!(kinds.contains(&k), "no {k:?} need");
    }
    // Distractors are never plantings.
    for q in set.users.iter().flat_map(|u| &u.questions) {
        for h in &q.distractors {
            assert!(
                !planting.contains(h),
                "{}: distractor {h} is a planting",
                q.id
            );
        }
    }
}

/// Every file under `dir`, relative path → bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn planted_sets_are_deterministic_per_seed() {
    let (a, b, c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let sa = write_planted_set(SEED, a.path()).unwrap();
    write_planted_set(SEED, b.path()).unwrap();
    let sc = write_planted_set(SEED + 1, c.path()).unwrap();
    let (ta, tb, tc) = (tree(a.path()), tree(b.path()), tree(c.path()));
    assert!(ta.len() > 8 * 3, "{} files", ta.len());
    assert!(ta == tb, "same seed, different files");
    assert_eq!(ta.keys().collect::<Vec<_>>(), tc.keys().collect::<Vec<_>>());
    for (path, bytes) in &ta {
        assert_ne!(
            bytes,
            &tc[path],
            "{} is the same for another seed",
            path.display()
        );
    }
    let statements = |s: &PlantedSet| -> Vec<String> {
        s.users
            .iter()
            .flat_map(|u| &u.questions)
            .flat_map(|q| &q.needs)
            .map(|n| n.statement.clone())
            .collect()
    };
    assert_eq!(statements(&sa), statements(&sc));
    // What was returned is what was written.
    assert_eq!(read_planted_set(a.path()).unwrap(), sa);
}

#[test]
fn reading_a_missing_labels_file_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let e = read_planted_set(dir.path()).unwrap_err().to_string();
    assert!(e.contains(LABELS_FILE), "{e}");
}

#[test]
fn planted_exports_import_with_every_labelled_hash() {
    let (dir, set) = shared();
    for user in &set.users {
        let scratch = tempfile::tempdir().unwrap();
        let mut history = History::open(scratch.path()).unwrap();
        let folder = dir.path().join(&user.export);
        let report = history
            .import(&[folder], &ImportOptions::default(), &NoProgress)
            .unwrap();
        assert_eq!(report.failed_files, 0, "{}: {:?}", user.id, report.files);
        for f in &report.files {
            assert_eq!(f.skipped_items, 0, "{}: {}", user.id, f.file);
        }
        let mut hashes = HashSet::new();
        history
            .store()
            .for_each_entry(512, |batch| {
                hashes.extend(batch.iter().map(|s| s.content_hash.clone()));
                Ok(())
            })
            .unwrap();
        assert!(
            hashes.len() >= 300,
            "{}: {} sessions",
            user.id,
            hashes.len()
        );
        assert_eq!(hashes.len(), user.sessions, "{}", user.id);
        assert!(user.formats.len() >= 3, "{}: {:?}", user.id, user.formats);
        for q in &user.questions {
            let labelled = q
                .needs
                .iter()
                .flat_map(|n| &n.sessions)
                .chain(&q.distractors);
            for h in labelled {
                assert!(hashes.contains(h), "{}: labelled {h} not imported", q.id);
            }
        }
    }
}

#[test]
fn distractors_are_on_topic_but_state_no_need() {
    let (dir, set) = shared();
    let mut bad = Vec::new();
    for user in &set.users {
        let sessions = parsed(&dir.path().join(&user.export));
        for q in &user.questions {
            let mut topic: BTreeSet<String> = content_words(&q.query);
            for h in q.needs.iter().flat_map(|n| &n.sessions) {
                topic.extend(content_words(&session_text(&sessions[h])));
            }
            for h in &q.distractors {
                let text = session_text(&sessions[h]);
                let words = content_words(&text);
                if words.is_disjoint(&topic) {
                    bad.push(format!("{} off topic: {text:?}", q.id));
                }
                for n in &q.needs {
                    for sp in &n.specifics {
                        let sw = content_words(sp);
                        if !sw.is_empty() && sw.is_subset(&words) {
                            bad.push(format!("{} states {sp:?} of {}: {text:?}", q.id, n.id));
                        }
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
