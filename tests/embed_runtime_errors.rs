//! A missing or wrong ONNX Runtime library is an error that names the file, never a panic.
//! (Own test binary: ONNX Runtime is bound once per process.)

use rudder_testkit as common;

use rudder::embed::{EmbedError, FastEmbedder};

#[test]
fn missing_runtime_is_a_clear_error() {
    let store = common::store();
    let files = store.ready_files(common::EMBED_MODEL).unwrap();
    let missing = std::path::Path::new("/nonexistent/libonnxruntime.so");
    let err = FastEmbedder::load(missing, &files[0], &files[1], 1)
        .err()
        .unwrap();
    assert!(matches!(err, EmbedError::Runtime { .. }), "{err}");
    assert!(
        err.to_string().contains("/nonexistent/libonnxruntime.so"),
        "{err}"
    );
}

#[test]
fn a_file_that_is_not_a_library_is_a_clear_error() {
    let store = common::store();
    let files = store.ready_files(common::EMBED_MODEL).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("libonnxruntime.so");
    std::fs::write(&fake, b"this is not a shared library").unwrap();
    let err = FastEmbedder::load(&fake, &files[0], &files[1], 1)
        .err()
        .unwrap();
    assert!(matches!(err, EmbedError::Runtime { .. }), "{err}");
    assert!(err.to_string().contains("libonnxruntime.so"), "{err}");
}
