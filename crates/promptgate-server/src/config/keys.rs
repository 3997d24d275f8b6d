//! Test support: the list of every key the config structs read, found by letting `Config`'s own
//! `Deserialize` implementation ask for its fields. A key added to any config struct (or to a struct it
//! embeds from another crate) shows up here with no list to maintain.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess, SeqAccess, VariantAccess,
    Visitor,
};

#[derive(Debug)]
pub struct TraceError(String);

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TraceError {}

impl de::Error for TraceError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        TraceError(msg.to_string())
    }
}

#[derive(Default)]
struct Record {
    keys: RefCell<BTreeSet<String>>,
    /// The deepest key whose value could not be traced in this pass.
    failed: RefCell<Option<String>>,
    /// Keys left out of later passes: their type reads itself in a way a tracer cannot follow
    /// (internally tagged enums, `deserialize_any`); they count as single keys.
    skip: BTreeSet<String>,
}

#[derive(Clone, Copy)]
struct Trace<'a> {
    path: &'a str,
    record: &'a Record,
}

impl Trace<'_> {
    fn leaf(&self) {
        if !self.path.is_empty() {
            self.record.keys.borrow_mut().insert(self.path.to_owned());
        }
    }
}

/// Every dotted key (`web.fetch.timeout_secs`, `providers.api_key_env`, `models.profile.temperature`)
/// that `T` reads. Arrays of tables contribute their element's keys under the array's name.
pub fn keys_of<T: for<'de> de::Deserialize<'de>>() -> BTreeSet<String> {
    let mut skip = BTreeSet::new();
    for _ in 0..64 {
        let record = Record {
            skip: skip.clone(),
            ..Default::default()
        };
        let result = T::deserialize(Trace {
            path: "",
            record: &record,
        });
        let failed = record.failed.borrow().clone();
        match (result, failed) {
            (Ok(_), _) | (Err(_), None) => {
                let mut keys = record.keys.into_inner();
                keys.extend(skip);
                return keys;
            }
            (Err(_), Some(path)) => {
                skip.insert(path);
            }
        }
    }
    skip
}

macro_rules! leaf {
    ($($method:ident => $visit:ident($value:expr)),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
            self.leaf();
            visitor.$visit($value)
        })*
    };
}

impl<'de> Deserializer<'de> for Trace<'_> {
    type Error = TraceError;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, TraceError> {
        Err(TraceError(format!(
            "{} reads itself without naming its fields",
            self.path
        )))
    }

    leaf! {
        deserialize_bool => visit_bool(false),
        deserialize_i8 => visit_i64(1),
        deserialize_i16 => visit_i64(1),
        deserialize_i32 => visit_i64(1),
        deserialize_i64 => visit_i64(1),
        deserialize_u8 => visit_u64(1),
        deserialize_u16 => visit_u64(1),
        deserialize_u32 => visit_u64(1),
        deserialize_u64 => visit_u64(1),
        deserialize_f32 => visit_f64(1.0),
        deserialize_f64 => visit_f64(1.0),
        deserialize_char => visit_char('a'),
        // Parses as a socket address too, so `listen` and `allowed_addrs` trace like plain strings.
        deserialize_str => visit_str("127.0.0.1:1"),
        deserialize_string => visit_str("127.0.0.1:1"),
        deserialize_bytes => visit_bytes(b"a"),
        deserialize_byte_buf => visit_bytes(b"a"),
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        self.leaf();
        visitor.visit_unit()
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_some(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        self.leaf();
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_seq(One { trace: self, left: 1 })
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_seq(One {
            trace: self,
            left: len,
        })
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        self.deserialize_tuple(len, visitor)
    }

    /// A free-form table: its keys are the user's, so the table itself is the key (and it has no
    /// fields to trace further).
    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        self.leaf();
        self.deserialize_struct("", &[], visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        visitor.visit_map(Fields {
            trace: self,
            fields,
            next: 0,
            current: String::new(),
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        self.leaf();
        visitor.visit_enum(FirstVariant {
            trace: self,
            variant: variants.first().copied().unwrap_or_default(),
        })
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_u64(0)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_unit()
    }
}

/// A sequence of `left` elements, each traced under the sequence's own key.
struct One<'a> {
    trace: Trace<'a>,
    left: usize,
}

impl<'de> SeqAccess<'de> for One<'_> {
    type Error = TraceError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, TraceError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(self.trace).map(Some)
    }
}

/// A struct's fields, each offered once and traced under `path.field`.
struct Fields<'a> {
    trace: Trace<'a>,
    fields: &'static [&'static str],
    next: usize,
    current: String,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = TraceError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, TraceError> {
        while let Some(field) = self.fields.get(self.next) {
            self.next += 1;
            let path = if self.trace.path.is_empty() {
                (*field).to_owned()
            } else {
                format!("{}.{field}", self.trace.path)
            };
            if self.trace.record.skip.contains(&path) {
                continue;
            }
            self.current = path;
            let key: de::value::StrDeserializer<'_, TraceError> = field.into_deserializer();
            return seed.deserialize(key).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, TraceError> {
        let path = self.current.clone();
        let result = seed.deserialize(Trace {
            path: &path,
            record: self.trace.record,
        });
        if result.is_err() {
            let mut failed = self.trace.record.failed.borrow_mut();
            if failed.is_none() {
                *failed = Some(path);
            }
        }
        result
    }
}

/// An enum read as its first variant.
struct FirstVariant<'a> {
    trace: Trace<'a>,
    variant: &'static str,
}

impl<'de, 'a> EnumAccess<'de> for FirstVariant<'a> {
    type Error = TraceError;
    type Variant = Trace<'a>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Trace<'a>), TraceError> {
        let name: de::value::StrDeserializer<'_, TraceError> = self.variant.into_deserializer();
        Ok((seed.deserialize(name)?, self.trace))
    }
}

impl<'de> VariantAccess<'de> for Trace<'_> {
    type Error = TraceError;

    fn unit_variant(self) -> Result<(), TraceError> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, TraceError> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, TraceError> {
        self.deserialize_tuple(len, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        self.deserialize_struct("", fields, visitor)
    }
}

/// The dotted keys a commented TOML file shows, its commented-out examples included: lines such as
/// `# [mcp]` and `# discovery_timeout_ms = 3000` count, prose does not.
pub fn documented_keys(text: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut table = String::new();
    for raw in text.lines() {
        let line = raw.trim_start().trim_start_matches('#').trim();
        if let Some(header) = line.strip_prefix('[') {
            let name = header.trim_start_matches('[');
            if let Some(end) = name.find(']') {
                let name = name[..end].trim();
                if name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
                {
                    table = name.to_owned();
                }
            }
            continue;
        }
        let Some((lhs, rhs)) = line.split_once('=') else {
            continue;
        };
        let lhs = lhs.trim();
        if lhs.is_empty()
            || !lhs
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.'))
        {
            continue;
        }
        let key = if table.is_empty() {
            lhs.to_owned()
        } else {
            format!("{table}.{lhs}")
        };
        keys.insert(key.clone());
        // An inline table documents its keys too: `search = { kind = "...", base_url = "..." }`.
        if let Some(inner) = rhs.trim().strip_prefix('{') {
            for part in inner.trim_end_matches('}').split(',') {
                if let Some((k, _)) = part.split_once('=') {
                    keys.insert(format!("{key}.{}", k.trim()));
                }
            }
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn every_key_the_config_reads_is_documented_in_the_embedded_default() {
        let read = keys_of::<Config>();
        // Sanity: the tracer reaches nested tables, arrays of tables and other crates' structs.
        for key in [
            "listen",
            "mcp.discovery_timeout_ms",
            "providers.api_key_env",
            "models.profile.temperature",
            "web.fetch.timeout_secs",
            "web.search",
        ] {
            assert!(read.contains(key), "the tracer missed {key}: {read:?}");
        }
        let documented = documented_keys(crate::config::EMBEDDED_DEFAULT);
        let missing: Vec<&String> = read.iter().filter(|key| !documented.contains(*key)).collect();
        assert!(
            missing.is_empty(),
            "config/promptgate.toml does not document these keys (add each, commented out with its \
             default and a comment, in its table): {missing:?}"
        );
    }

    #[test]
    fn documented_keys_follow_tables_and_inline_tables() {
        let keys = documented_keys(
            "listen = \"x\"\n# [web]\n# search = { kind = \"a\", base_url = \"b\" }\n# A prose line, not a key.\n\
             [[models]]\nid = \"m\"\n# profile.temperature = 0.7\n",
        );
        for key in [
            "listen",
            "web.search",
            "web.search.kind",
            "web.search.base_url",
            "models.id",
            "models.profile.temperature",
        ] {
            assert!(keys.contains(key), "{key} not in {keys:?}");
        }
        assert!(!keys.iter().any(|k| k.contains("prose")));
    }
}
