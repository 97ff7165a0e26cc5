//! Streaming JSON: exports are single huge arrays (Takeout, ChatGPT, Claude), so importers
//! visit one element at a time instead of loading the file. Memory stays bounded by the largest
//! element. Errors carry the element index and serde_json's line and column.

use std::fmt;
use std::io::Read;
use std::marker::PhantomData;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

use super::{ImportError, InputFile};

/// Calls `f(index, item)` for every element of the top-level JSON array in `reader`.
/// Returns the number of elements.
pub fn for_each_array_item<T, F>(
    file: &InputFile,
    reader: &mut dyn Read,
    mut f: F,
) -> Result<usize, ImportError>
where
    T: DeserializeOwned,
    F: FnMut(usize, T) -> Result<(), ImportError>,
{
    let mut state = State {
        f: &mut f,
        count: 0,
        error: None,
        _t: PhantomData,
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let result =
        de::Deserializer::deserialize_seq(&mut de, ArrayVisitor(&mut state)).and_then(|_| de.end());
    finish(file, state, result)
}

/// Calls `f(index, item)` for every element of the array stored under `key` in the top-level
/// JSON object (`{"Browser History": [...]}`); other keys are skipped. Returns the number of
/// elements, or a malformed-file error if the key is missing.
pub fn for_each_field_item<T, F>(
    file: &InputFile,
    reader: &mut dyn Read,
    key: &str,
    mut f: F,
) -> Result<usize, ImportError>
where
    T: DeserializeOwned,
    F: FnMut(usize, T) -> Result<(), ImportError>,
{
    let mut state = State {
        f: &mut f,
        count: 0,
        error: None,
        _t: PhantomData,
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let result = de::Deserializer::deserialize_map(
        &mut de,
        ObjectVisitor {
            state: &mut state,
            key,
        },
    )
    .and_then(|found| {
        if found {
            Ok(())
        } else {
            Err(de::Error::custom(format!("no {key:?} array in the object")))
        }
    })
    .and_then(|_| de.end());
    finish(file, state, result)
}

struct State<'f, T, F> {
    f: &'f mut F,
    count: usize,
    error: Option<ImportError>,
    _t: PhantomData<T>,
}

fn finish<T, F>(
    file: &InputFile,
    state: State<'_, T, F>,
    result: Result<(), serde_json::Error>,
) -> Result<usize, ImportError> {
    if let Some(e) = state.error {
        return Err(e);
    }
    match result {
        Ok(()) => Ok(state.count),
        Err(e) => {
            let place = if e.line() > 0 {
                format!(
                    "item {}, line {}, column {}",
                    state.count,
                    e.line(),
                    e.column()
                )
            } else {
                format!("item {}", state.count)
            };
            let message = match e.classify() {
                serde_json::error::Category::Eof => {
                    format!("the file ends early (truncated?): {e}")
                }
                _ => strip_position(&e.to_string()),
            };
            Err(file.malformed(place, message))
        }
    }
}

/// serde_json appends " at line L column C", which the place already says.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// An array element that may not be what the importer expects: the value, or why it could not
/// be read, with the path of the offending field (`title: invalid type: integer `5`, expected a
/// string`). The caller skips it and reports it ([`Element::skipped`]), instead of failing the
/// file or dropping it without a word.
#[derive(Debug)]
pub struct Element<T>(pub Result<T, String>);

impl<T> Element<T> {
    /// The record that reports this element as skipped: `item N` (0-based, as errors say).
    pub fn skipped(index: usize, reason: String) -> crate::history::entry::Record {
        crate::history::entry::Record::Skipped {
            place: format!("item {index}"),
            reason,
        }
    }
}

impl<'de, T: DeserializeOwned> de::Deserialize<'de> for Element<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = <serde_json::Value as de::Deserialize>::deserialize(d)?;
        Ok(Element(serde_path_to_error::deserialize(value).map_err(
            |e| {
                let path = e.path().to_string();
                let inner = strip_position(&e.into_inner().to_string());
                if path == "." {
                    inner
                } else {
                    format!("{path}: {inner}")
                }
            },
        )))
    }
}

const CALLBACK_FAILED: &str = "\u{0}callback failed";

struct ArrayVisitor<'s, 'f, T, F>(&'s mut State<'f, T, F>);

impl<'de, T, F> Visitor<'de> for ArrayVisitor<'_, '_, T, F>
where
    T: DeserializeOwned,
    F: FnMut(usize, T) -> Result<(), ImportError>,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<T>()? {
            if let Err(e) = (self.0.f)(self.0.count, item) {
                self.0.error = Some(e);
                return Err(de::Error::custom(CALLBACK_FAILED));
            }
            self.0.count += 1;
        }
        Ok(())
    }
}

impl<'de, T, F> DeserializeSeed<'de> for ArrayVisitor<'_, '_, T, F>
where
    T: DeserializeOwned,
    F: FnMut(usize, T) -> Result<(), ImportError>,
{
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

struct ObjectVisitor<'s, 'f, 'k, T, F> {
    state: &'s mut State<'f, T, F>,
    key: &'k str,
}

impl<'de, T, F> Visitor<'de> for ObjectVisitor<'_, '_, '_, T, F>
where
    T: DeserializeOwned,
    F: FnMut(usize, T) -> Result<(), ImportError>,
{
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(k) = map.next_key::<String>()? {
            if !found && k == self.key {
                map.next_value_seed(ArrayVisitor(&mut *self.state))?;
                found = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(content: &[u8]) -> (tempfile::NamedTempFile, InputFile) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(content).unwrap();
        let input = InputFile::plain(f.path());
        (f, input)
    }

    #[test]
    fn streams_array_items() {
        let (_f, input) = file_with(br#"[1, 2, 3]"#);
        let mut seen = vec![];
        let n = input
            .with_reader(|r| {
                for_each_array_item::<u32, _>(&input, r, |i, v| {
                    seen.push((i, v));
                    Ok(())
                })
            })
            .unwrap();
        assert_eq!(n, 3);
        assert_eq!(seen, vec![(0, 1), (1, 2), (2, 3)]);
    }

    #[test]
    fn truncated_array_names_item_and_line() {
        let (_f, input) = file_with(b"[1,\n2,\n3");
        let err = input
            .with_reader(|r| for_each_array_item::<u32, _>(&input, r, |_, _| Ok(())))
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 3"), "{err}");
        assert!(err.contains("truncated"), "{err}");
        assert!(err.contains(input.display()), "{err}");
    }

    #[test]
    fn invalid_utf8_is_an_error_with_a_place() {
        let (_f, input) = file_with(b"[\"ok\", \"bad \xff\xfe\"]");
        let err = input
            .with_reader(|r| for_each_array_item::<String, _>(&input, r, |_, _| Ok(())))
            .unwrap_err()
            .to_string();
        assert!(err.contains("item 1"), "{err}");
    }

    #[test]
    fn callback_error_passes_through() {
        let (_f, input) = file_with(b"[1,2]");
        let err = input
            .with_reader(|r| {
                for_each_array_item::<u32, _>(&input, r, |i, _| {
                    if i == 1 {
                        Err(input.malformed("item 1", "nope"))
                    } else {
                        Ok(())
                    }
                })
            })
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("item 1: nope"), "{err}");
    }

    #[test]
    fn streams_field_array_and_skips_other_keys() {
        let (_f, input) = file_with(br#"{"x": {"y": [9]}, "Browser History": [4, 5]}"#);
        let mut seen = vec![];
        input
            .with_reader(|r| {
                for_each_field_item::<u32, _>(&input, r, "Browser History", |_, v| {
                    seen.push(v);
                    Ok(())
                })
            })
            .unwrap();
        assert_eq!(seen, vec![4, 5]);
        let (_g, other) = file_with(br#"{"x": 1}"#);
        let err = other
            .with_reader(|r| {
                for_each_field_item::<u32, _>(&other, r, "Browser History", |_, _| Ok(()))
            })
            .unwrap_err()
            .to_string();
        assert!(err.contains("Browser History"), "{err}");
    }
}
