//! The document library end to end: each format's text (PDFs and DOCX built here, for real),
//! page numbers into citations, incremental re-adds, per-file failures that name the file,
//! hybrid search with the real embedding model, and the Wikipedia-format corpus (the CLI's
//! `docs` commands: `crates/cli/tests/cli_docs.rs`).

use rudder_testkit as common;
use rudder_testkit::fixtures_gen;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rudder::embed::{Embedder, FastEmbedder};
use rudder::history::NoProgress;
use rudder::sources::docs::{DocsError, DocsSource, FileStatus, Format, Library};
use rudder::sources::{CitationTarget, Evidence, Source};

use fixtures_gen::{library_folder, pdf, write, PDF_PAGE_1, PDF_PAGE_2};

fn open(root: &Path) -> Library {
    Library::open(&root.join("docs")).unwrap()
}

fn search(lib: &mut Library, q: &str) -> Vec<Evidence> {
    lib.search(q, 5, None).unwrap()
}

fn doc_path(target: &CitationTarget) -> &str {
    match target {
        CitationTarget::Document { path, .. } => path,
        other => panic!("not a document target: {other:?}"),
    }
}

#[test]
fn every_format_yields_its_text_and_pdf_pages_reach_the_citation() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = library_folder(tmp.path());
    let mut lib = open(tmp.path());
    let report = lib.add(&dir, None, &NoProgress).unwrap();
    assert_eq!(report.added, 5, "{report:#?}");
    assert_eq!(report.failed, 0, "{report:#?}");

    let docs = lib.list(false).unwrap();
    let by_format = |f: Format| docs.iter().find(|d| d.format == f).unwrap();
    assert_eq!(by_format(Format::Markdown).title, "Tomato Growing Notes");
    assert_eq!(by_format(Format::Text).title, "plain");
    assert_eq!(by_format(Format::Html).title, "Bicycle Maintenance");
    assert_eq!(
        by_format(Format::Pdf).title,
        "Field Notes on Birds and Rocks"
    );
    assert_eq!(by_format(Format::Pdf).pages, Some(2));
    assert_eq!(by_format(Format::Docx).title, "Quarterly Letter");
    assert!(docs.iter().all(|d| Path::new(&d.path).is_absolute()));

    // Each format's text is searchable and comes back as the chunk text.
    for (query, file, needle) in [
        ("hornworms", "garden.md", "Hornworms chew the leaves"),
        ("sourdough", "plain.txt", "feed it flour and water daily"),
        ("lubricate chain", "page.html", "Lubricate the chain"),
        (
            "tyre pressure",
            "page.html",
            "tyre pressure weekly & before",
        ),
        (
            "lighthouse tours",
            "letter.docx",
            "Revenue from the lighthouse tours rose",
        ),
        ("volunteers", "letter.docx", "Staff & volunteers repainted"),
    ] {
        let hits = search(&mut lib, query);
        let top = hits.first().unwrap_or_else(|| panic!("no hit for {query}"));
        assert!(doc_path(&top.target).ends_with(file), "{query}: {top:?}");
        assert!(top.text.contains(needle), "{query}: {:?}", top.text);
    }

    // Scripts, styles, noscript, front matter, raw HTML in Markdown and deleted DOCX text are
    // not indexed; nor are hidden folders.
    for absent in [
        "xyzzyscriptword",
        "anotherscriptonlyword",
        "trackingpixelsecret",
        "zebracolumnstyle",
        "enablejavascriptplease",
        "private-front-matter",
        "withdrawnclause",
        "hiddenfolderword",
    ] {
        assert!(search(&mut lib, absent).is_empty(), "{absent} was indexed");
    }

    // PDF pages survive into citations.
    let terns = search(&mut lib, "arctic terns migration");
    let basalt = search(&mut lib, "basalt hexagonal pillars");
    for (hits, page, words) in [(&terns, 1, "pole to pole"), (&basalt, 2, "Cooling lava")] {
        let top = &hits[0];
        match &top.target {
            CitationTarget::Document {
                path, page: p, url, ..
            } => {
                assert!(path.ends_with("report.pdf"));
                assert_eq!(*p, Some(page), "{top:?}");
                assert_eq!(*url, None);
            }
            other => panic!("{other:?}"),
        }
        assert!(top.text.contains(words), "{:?}", top.text);
        assert_eq!(top.title, "Field Notes on Birds and Rocks");
        // Shared reports name the file from the folder the user added, never its full path.
        assert_eq!(
            top.target.locator(),
            format!(
                "notes/sub/report.pdf, page {page}, passage {}",
                match &top.target {
                    CitationTarget::Document { chunk, .. } => chunk + 1,
                    _ => unreachable!(),
                }
            )
        );
        assert_eq!(top.target.link(), None);
    }
    // Never one chunk across two pages.
    assert!(!terns[0].text.contains("basalt"));
}

#[test]
fn readding_skips_unchanged_reindexes_changed_and_drops_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = library_folder(tmp.path());
    let mut lib = open(tmp.path());
    lib.add(&dir, None, &NoProgress).unwrap();

    let again = lib.add(&dir, None, &NoProgress).unwrap();
    assert_eq!(
        (
            again.added,
            again.updated,
            again.unchanged,
            again.removed,
            again.failed
        ),
        (0, 0, 5, 0, 0),
        "{again:#?}"
    );
    assert_eq!(again.chunks, 0);

    // Same bytes rewritten (new mtime): still unchanged, found by its hash.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(
        dir.join("plain.txt"),
        "Sourdough starter: feed it flour and water daily.\nKeep it somewhere warm.\n",
    )
    .unwrap();
    // Changed, removed, new.
    write(
        &dir,
        "garden.md",
        "# Tomato Growing Notes\n\nMulch with straw against blight.\n",
    );
    std::fs::remove_file(dir.join("sub/letter.docx")).unwrap();
    write(
        &dir,
        "sub/new.txt",
        "Kombucha needs a scoby and sweet tea.\n",
    );

    let third = lib.add(&dir, None, &NoProgress).unwrap();
    assert_eq!(
        (
            third.added,
            third.updated,
            third.unchanged,
            third.removed,
            third.failed
        ),
        (1, 1, 3, 1, 0),
        "{third:#?}"
    );
    let status_of = |name: &str| {
        third
            .files
            .iter()
            .find(|f| f.file.ends_with(name))
            .map(|f| f.status)
    };
    assert_eq!(status_of("garden.md"), Some(FileStatus::Updated));
    assert_eq!(status_of("letter.docx"), Some(FileStatus::Removed));
    assert_eq!(status_of("new.txt"), Some(FileStatus::Added));
    assert_eq!(status_of("plain.txt"), Some(FileStatus::Unchanged));

    assert!(
        search(&mut lib, "hornworms").is_empty(),
        "old text of a changed file"
    );
    assert!(
        search(&mut lib, "lighthouse tours").is_empty(),
        "text of a removed file"
    );
    assert_eq!(search(&mut lib, "straw blight").len(), 1);
    assert_eq!(search(&mut lib, "kombucha").len(), 1);
    assert_eq!(lib.list(false).unwrap().len(), 5);
    let stats = lib.stats().unwrap();
    assert_eq!(stats.store.chunks, stats.indexed_chunks);

    // A removed root: all its documents go when it is added again.
    std::fs::remove_dir_all(dir.join("sub")).unwrap();
    let fourth = lib.add(&dir, None, &NoProgress).unwrap();
    assert_eq!((fourth.removed, fourth.unchanged), (2, 3), "{fourth:#?}");
}

#[test]
fn a_bad_file_fails_alone_naming_the_file_and_place() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mixed");
    write(
        &dir,
        "good.md",
        "# Good\n\nThe okapi is a forest giraffe.\n",
    );
    write(
        &dir,
        "broken.pdf",
        b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 9 0 R\ngarbage garbage\n",
    );
    write(&dir, "latin1.txt", b"first line\ncaf\xe9 au lait\n");
    write(&dir, "fake.docx", b"this is not a zip archive");
    write(&dir, "empty.md", "   \n\n");
    let mut lib = open(tmp.path());
    let report = lib.add(&dir, None, &NoProgress).unwrap();
    assert_eq!((report.added, report.failed), (1, 4), "{report:#?}");
    let reason = |name: &str| -> String {
        let f = report
            .files
            .iter()
            .find(|f| f.file.ends_with(name))
            .unwrap();
        assert_eq!(f.status, FileStatus::Failed);
        let r = f.reason.clone().unwrap();
        assert!(r.contains(name), "reason does not name the file: {r}");
        r
    };
    assert!(
        reason("broken.pdf").contains("PDF"),
        "{}",
        reason("broken.pdf")
    );
    let latin = reason("latin1.txt");
    assert!(
        latin.contains("line 2") && latin.contains("UTF-8"),
        "{latin}"
    );
    assert!(reason("fake.docx").contains("not a DOCX"));
    assert!(reason("empty.md").contains("no text"));
    // Nothing half-stored: only the good document is there.
    let docs = lib.list(false).unwrap();
    assert_eq!(docs.len(), 1);
    assert_eq!(search(&mut lib, "okapi").len(), 1);

    // A good file that turns bad loses its stale index entry.
    write(
        &dir,
        "good.md",
        b"# Good\n\n\xff\xfe not utf8 at all \xc3\x28\n",
    );
    let again = lib.add(&dir, None, &NoProgress).unwrap();
    let f = again
        .files
        .iter()
        .find(|f| f.file.ends_with("good.md"))
        .unwrap();
    assert_eq!(f.status, FileStatus::Failed);
    assert!(f
        .reason
        .as_ref()
        .unwrap()
        .contains("earlier version was removed"));
    assert!(search(&mut lib, "okapi").is_empty());

    // A PDF whose second page cannot be read names that page: its font points at an object
    // that does not exist (same length, so the cross-reference table stays right).
    let mut bad_page = pdf(&[PDF_PAGE_1, PDF_PAGE_2], None);
    let font_refs: Vec<usize> = bad_page
        .windows(9)
        .enumerate()
        .filter(|(_, w)| *w == b"/F1 3 0 R")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(font_refs.len(), 2);
    bad_page[font_refs[1]..font_refs[1] + 9].copy_from_slice(b"/F1 9 0 R");
    let pages_pdf = write(&dir, "pages.pdf", &bad_page);
    let third = lib.add(&pages_pdf, None, &NoProgress).unwrap();
    assert_eq!(third.failed, 1, "{third:#?}");
    let r = third.files[0].reason.clone().unwrap();
    assert!(r.contains("pages.pdf: page 2: "), "{r}");
    assert!(
        search(&mut lib, "arctic terns").is_empty(),
        "half a PDF was stored"
    );
}

#[test]
fn files_and_folders_can_be_added_and_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = library_folder(tmp.path());
    let mut lib = open(tmp.path());
    let single = lib.add(&dir.join("plain.txt"), None, &NoProgress).unwrap();
    assert_eq!(single.added, 1);
    let unsupported = lib.add(&dir.join("image.png"), None, &NoProgress).unwrap();
    assert_eq!(unsupported.failed, 1);
    assert!(unsupported.files[0]
        .reason
        .as_ref()
        .unwrap()
        .contains("unsupported format"));
    let missing = lib
        .add(&dir.join("nope.md"), None, &NoProgress)
        .unwrap_err();
    assert!(missing.to_string().contains("nope.md"), "{missing}");

    lib.add(&dir, None, &NoProgress).unwrap();
    assert_eq!(lib.list(false).unwrap().len(), 5);
    let roots = lib.roots().unwrap();
    assert!(
        roots.iter().any(|r| r.kind == "folder" && r.documents == 5),
        "{roots:#?}"
    );

    let removed = lib.remove(&dir.join("sub")).unwrap();
    assert_eq!(removed.documents, 2);
    assert!(search(&mut lib, "basalt").is_empty());
    let removed = lib.remove(&dir).unwrap();
    assert_eq!(removed.documents, 3);
    assert_eq!(removed.roots, 2);
    assert!(lib.list(true).unwrap().is_empty());
    assert!(matches!(lib.remove(&dir), Err(DocsError::NotInLibrary(_))));
    let stats = lib.stats().unwrap();
    assert_eq!(
        (
            stats.store.documents,
            stats.store.chunks,
            stats.indexed_chunks
        ),
        (0, 0, 0)
    );
}

#[test]
fn a_lost_text_index_is_rebuilt_from_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = library_folder(tmp.path());
    {
        let mut lib = open(tmp.path());
        lib.add(&dir, None, &NoProgress).unwrap();
    }
    std::fs::remove_dir_all(tmp.path().join("docs/text-index")).unwrap();
    let mut lib = open(tmp.path());
    assert_eq!(search(&mut lib, "hornworms").len(), 1);
    let stats = lib.stats().unwrap();
    assert_eq!(stats.store.chunks, stats.indexed_chunks);
}

fn corpus_fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/docs/wiki_sample.json")
}

#[test]
fn a_wikipedia_corpus_indexes_articles_with_their_urls() {
    let tmp = tempfile::tempdir().unwrap();
    // A copy, so the test can change it.
    let json = write(
        tmp.path(),
        "corpus/summaries.json",
        std::fs::read(corpus_fixture()).unwrap(),
    );
    let mut lib = open(tmp.path());
    let report = lib
        .add_corpus_json(&json, "wiki-test", None, &NoProgress)
        .unwrap();
    assert_eq!((report.added, report.failed), (21, 0), "{report:#?}");

    let hits = search(&mut lib, "waggle dance nectar");
    let top = &hits[0];
    let canonical = std::fs::canonicalize(&json).unwrap();
    assert_eq!(
        top.target,
        CitationTarget::Document {
            path: format!("{}#Honey bee", canonical.display()),
            chunk: 0,
            page: None,
            url: Some("https://en.wikipedia.org/wiki/Honey_bee".into()),
            name: Some("Honey bee".into()),
        }
    );
    // A shared report names the article, never the corpus file it was read from.
    assert_eq!(top.target.locator(), "Honey bee, passage 1");
    assert_eq!(top.title, "Honey bee");
    assert!(top.text.starts_with("Honey bees live in large colonies"));
    assert_eq!(
        top.target.link().as_deref(),
        Some("https://en.wikipedia.org/wiki/Honey_bee")
    );

    // Description and topic are searchable too; titles are percent-encoded in URLs.
    let url_of = |hits: &[Evidence]| match &hits[0].target {
        CitationTarget::Document { url, .. } => url.clone().unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        url_of(&search(&mut lib, "accented letter parentheses")),
        "https://en.wikipedia.org/wiki/Caf%C3%A9_(drink)"
    );
    assert_eq!(
        url_of(&search(&mut lib, "ampersand title")),
        "https://en.wikipedia.org/wiki/AT%26T"
    );
    assert_eq!(search(&mut lib, "eusocial")[0].title, "Honey bee");

    // Idempotent; listed as one corpus, its articles only on request.
    let again = lib
        .add_corpus_json(&json, "wiki-test", None, &NoProgress)
        .unwrap();
    assert_eq!((again.added, again.unchanged, again.chunks), (0, 21, 0));
    assert!(lib.list(false).unwrap().is_empty());
    assert_eq!(lib.list(true).unwrap().len(), 21);
    let root = lib.corpus_root("wiki-test").unwrap().unwrap();
    assert_eq!((root.kind.as_str(), root.documents), ("corpus", 21));

    // A new version: one article changed, one gone, one new.
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let map = value.as_object_mut().unwrap();
    map["Tea"]["extract"] = "Tea is brewed from leaves; matcha is powdered green tea.".into();
    map.remove("Chess");
    map.insert(
        "Kiwi".into(),
        serde_json::json!({"title": "Kiwi", "extract": "The kiwi is a flightless bird of New Zealand.", "description": "Bird", "topic": "Biology and health sciences"}),
    );
    std::fs::write(&json, serde_json::to_vec(&value).unwrap()).unwrap();
    let third = lib
        .add_corpus_json(&json, "wiki-test", None, &NoProgress)
        .unwrap();
    assert_eq!(
        (third.added, third.updated, third.unchanged, third.removed),
        (1, 1, 19, 1),
        "{third:#?}"
    );
    assert_eq!(search(&mut lib, "matcha")[0].title, "Tea");
    assert!(search(&mut lib, "checkmate").is_empty());

    // Through the Source trait.
    let mut source = DocsSource::new(lib);
    assert_eq!(source.name(), "documents");
    assert!(!source.is_remote());
    let found = source.search("flightless bird", 3, None).unwrap();
    assert_eq!(found[0].title, "Kiwi");

    // Removing the corpus removes its articles.
    let mut lib = source.into_library();
    assert_eq!(lib.remove(&json).unwrap().documents, 21);
    assert!(search(&mut lib, "kiwi").is_empty());
}

#[test]
fn the_same_corpus_from_another_folder_is_not_indexed_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(corpus_fixture()).unwrap();
    let first = write(tmp.path(), "models-a/wiki/summaries.json", bytes.clone());
    let moved = write(tmp.path(), "models-b/wiki/summaries.json", bytes);
    let mut lib = open(tmp.path());
    lib.add_corpus_json(&first, "wiki-test", None, &NoProgress)
        .unwrap();
    // The models folder moved: the identical corpus is recognised, nothing is added.
    let again = lib
        .add_corpus_json(&moved, "wiki-test", None, &NoProgress)
        .unwrap();
    assert_eq!((again.added, again.unchanged), (0, 21), "{again:#?}");
    assert_eq!(lib.stats().unwrap().store.documents, 21);
    assert_eq!(search(&mut lib, "waggle dance nectar").len(), 1);

    // A different version there replaces the old one instead of joining it.
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&moved).unwrap()).unwrap();
    value.as_object_mut().unwrap().remove("Chess");
    std::fs::write(&moved, serde_json::to_vec(&value).unwrap()).unwrap();
    let newer = lib
        .add_corpus_json(&moved, "wiki-test", None, &NoProgress)
        .unwrap();
    assert_eq!(newer.added, 20, "{newer:#?}");
    assert_eq!(lib.stats().unwrap().store.documents, 20);
    assert_eq!(lib.roots().unwrap().len(), 1);
    assert!(search(&mut lib, "checkmate").is_empty());
}

fn embedder() -> &'static FastEmbedder {
    static EMBEDDER: OnceLock<FastEmbedder> = OnceLock::new();
    EMBEDDER
        .get_or_init(|| FastEmbedder::from_store(&common::store(), common::EMBED_MODEL, 1).unwrap())
}

#[test]
fn hybrid_search_finds_a_paraphrase_with_the_real_embedder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("hybrid");
    write(
        &dir,
        "cat.md",
        "# Afternoon\n\nThe kitten slept on the warm windowsill all afternoon, purring.\n",
    );
    write(
        &dir,
        "finance.txt",
        "Quarterly revenue grew in the semiconductor division despite supply issues.\n",
    );
    write(
        &dir,
        "cooking.txt",
        "Simmer the lentils with cumin and garlic until soft.\n",
    );
    write(&dir, "report.pdf", pdf(&[PDF_PAGE_1, PDF_PAGE_2], None));
    let e = embedder();
    let model = common::EMBED_MODEL;
    let mut lib = open(tmp.path());
    let report = lib
        .add(&dir, Some((e as &dyn Embedder, model)), &NoProgress)
        .unwrap();
    assert_eq!(report.added, 4);
    let stats = lib.stats().unwrap();
    assert_eq!(stats.store.embedded.get(model), Some(&stats.store.chunks));
    assert_eq!(report.embedded, stats.store.chunks);

    // No word in common with the document: BM25 finds nothing, the vectors do.
    let query = "a cat napping in the sun";
    assert!(lib.search(query, 3, None).unwrap().is_empty());
    let hits = lib
        .search(query, 3, Some((e as &dyn Embedder, model)))
        .unwrap();
    assert!(doc_path(&hits[0].target).ends_with("cat.md"), "{hits:#?}");

    // Hybrid keeps the page of a PDF chunk found semantically.
    let hits = lib
        .search(
            "volcanic rock formations",
            2,
            Some((e as &dyn Embedder, model)),
        )
        .unwrap();
    assert!(
        matches!(&hits[0].target, CitationTarget::Document { path, page: Some(2), .. } if path.ends_with("report.pdf")),
        "{hits:#?}"
    );

    // Nothing left to embed; a new file is embedded on the next add.
    assert_eq!(lib.embed_pending(e, model, &NoProgress).unwrap(), 0);
    write(
        &dir,
        "more.txt",
        "Octopuses change colour to hide from predators.\n",
    );
    let more = lib
        .add(&dir, Some((e as &dyn Embedder, model)), &NoProgress)
        .unwrap();
    assert_eq!((more.added, more.embedded), (1, 1));
}
