//! The pure built-in functions (docs/language.md, "Built-in functions").
//!
//! Argument counts are checked by the compiler; values are checked here
//! and every failure says which function got what.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, LazyLock, Mutex};

use super::{Fields, Num, Val, describe, equal, push_display};
use crate::ir::Function;
use crate::media::Kind;
use crate::value::{Object, StrBuf};

/// Most distinct `matches` patterns kept compiled; when full, the cache
/// starts again (patterns from the data may all differ).
const PATTERNS_KEPT: usize = 256;

/// The compiled `matches` patterns, by text: a pattern is compiled once,
/// not once per call (a `for` over 50,000 items compiled it 50,000 times).
static PATTERNS: LazyLock<Mutex<HashMap<String, Arc<regex::Regex>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The file at `path` read as a media value, `{media_type, data}` (see
/// [`crate::media::read_file`]): its base64 written straight into the
/// string of `data`, never copied.
///
/// # Errors
/// The file cannot be read, is too large or is not a whole file of `kind`.
pub(crate) fn media_file(path: &Path, kind: Option<Kind>, limit: usize) -> Result<Object, String> {
    let (media_type, data) = crate::media::read_file(path, kind, limit, StrBuf::zeroed)?;
    let data = data.into_str().map_err(|e| format!("`{}`: {e}", path.display()))?;
    let mut fields = Fields::with_capacity(2);
    fields.insert("media_type".into(), Val::from(media_type));
    fields.insert("data".into(), Val::String(data));
    Ok(Object::from(fields))
}

/// The compiled regular expression `pattern` of `matches`, shared (a clone
/// of a `Regex` would start with empty matching caches, which costs nearly
/// what compiling does). The lock is held only to look it up or store it;
/// matching runs outside it.
fn compiled(pattern: &str) -> Result<Arc<regex::Regex>, String> {
    let cached = crate::sync::lock(&PATTERNS).get(pattern).cloned();
    if let Some(regex) = cached {
        return Ok(regex);
    }
    let regex = Arc::new(crate::ir::pattern(pattern)?);
    let mut patterns = crate::sync::lock(&PATTERNS);
    if patterns.len() >= PATTERNS_KEPT {
        patterns.clear();
    }
    patterns.insert(pattern.to_owned(), Arc::clone(&regex));
    Ok(regex)
}

/// Calls `function` with `args` (their count already checked).
pub(super) fn call(function: Function, args: &[Val]) -> Result<Val, String> {
    let name = function.name();
    let arg = |i: usize| args.get(i).unwrap_or(&Val::Null);
    let text = |i: usize| expect_str(name, arg(i));
    let result = match function {
        Function::Len => match arg(0) {
            Val::String(s) => count(s.chars().count()),
            Val::Array(items) => count(items.len()),
            Val::Object(map) => count(map.len()),
            other => return Err(wrong(name, "a string, array or object", other)),
        },
        Function::Upper => Val::string(text(0)?.to_uppercase()),
        Function::Lower => Val::string(text(0)?.to_lowercase()),
        Function::Trim => Val::from(text(0)?.trim()),
        Function::Split => {
            let (s, sep) = (text(0)?, text(1)?);
            if sep.is_empty() {
                Val::array(s.chars().map(|c| Val::string(c.to_string())).collect())
            } else {
                Val::array(s.split(sep).map(Val::from).collect())
            }
        }
        Function::Join => {
            let items = expect_array(name, arg(0))?;
            let sep = text(1)?;
            let mut out = String::new();
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                push_display(&mut out, item);
            }
            Val::string(out)
        }
        Function::Contains => Val::Bool(match (arg(0), arg(1)) {
            (Val::String(s), Val::String(part)) => s.contains(part.as_str()),
            (Val::Array(items), needle) => items.iter().any(|i| equal(i, needle)),
            (Val::Object(map), Val::String(key)) => map.contains_key(key.as_str()),
            (other, _) => return Err(wrong(name, "a string, array or object", other)),
        }),
        Function::StartsWith => Val::Bool(text(0)?.starts_with(text(1)?)),
        Function::EndsWith => Val::Bool(text(0)?.ends_with(text(1)?)),
        Function::Replace => Val::string(text(0)?.replace(text(1)?, text(2)?)),
        Function::Round => round(args)?,
        Function::Floor => whole(name, arg(0), f64::floor)?,
        Function::Ceil => whole(name, arg(0), f64::ceil)?,
        Function::Abs => match expect_num(name, arg(0))? {
            Num::I(i) => Val::int(i.checked_abs().ok_or("integer overflow in `abs`")?),
            Num::F(f) => Num::F(f.abs()).to_value(),
        },
        Function::Min | Function::Max => extreme(function, args)?,
        Function::Sum => {
            let mut total = Num::I(0);
            for item in expect_array(name, arg(0))? {
                total = total
                    .checked_add(expect_num(name, item)?)
                    .ok_or("integer overflow in `sum`")?;
            }
            total.finite().ok_or("`sum` is not a finite number")?.to_value()
        }
        Function::Keys => Val::array(expect_object(name, arg(0))?.keys().map(Val::from).collect()),
        Function::Values => Val::array(expect_object(name, arg(0))?.values().cloned().collect()),
        Function::Get => {
            let default = arg(2).clone();
            match (arg(0), arg(1)) {
                (Val::Object(map), Val::String(key)) => {
                    map.get(key.as_str()).cloned().unwrap_or(default)
                }
                (Val::Array(items), Val::Number(n)) => n
                    .as_u64()
                    .and_then(|i| usize::try_from(i).ok())
                    .and_then(|i| items.get(i))
                    .cloned()
                    .unwrap_or(default),
                (Val::Null, _) => default,
                (other, _) => return Err(wrong(name, "an object or array", other)),
            }
        }
        Function::ToString => {
            let mut out = String::new();
            push_display(&mut out, arg(0));
            Val::string(out)
        }
        Function::ToNumber => match arg(0) {
            Val::Number(_) => arg(0).clone(),
            Val::String(s) => parse_number(s.trim()).ok_or_else(|| {
                format!("`to_number` cannot read {} as a number", describe(arg(0)))
            })?,
            other => return Err(wrong(name, "a string or number", other)),
        },
        Function::ToJson => Val::string(arg(0).to_string()),
        Function::FromJson => serde_json::from_str::<serde_json::Value>(text(0)?)
            .map_err(|e| format!("`from_json` got invalid JSON: {e}"))?
            .into(),
        Function::Matches => {
            let (s, p) = (text(0)?, text(1)?);
            let regex = compiled(p).map_err(|e| format!("`matches`: bad pattern: {e}"))?;
            Val::Bool(regex.is_match(s))
        }
        Function::File => {
            let path = text(0)?;
            let limit = crate::media::file_limit();
            Val::Object(
                media_file(Path::new(path), None, limit).map_err(|e| format!("`file`: {e}"))?,
            )
        }
        Function::Env => {
            let var = text(0)?;
            match std::env::var(var) {
                Ok(value) => Val::string(value),
                Err(_) if args.len() > 1 => arg(1).clone(),
                Err(_) => return Err(format!("environment variable `{var}` is not set")),
            }
        }
        Function::Successes => Val::array(
            tried(name, arg(0))?
                .filter_map(|(_, result)| match result {
                    Tried::Ok(value) => Some(value.clone()),
                    Tried::Failed { .. } => None,
                })
                .collect(),
        ),
        Function::Failures => Val::array(
            tried(name, arg(0))?
                .filter_map(|(index, result)| match result {
                    Tried::Ok(_) => None,
                    Tried::Failed { error, code, kind } => Some(Val::object(Fields::from([
                        ("index".to_owned(), count(index)),
                        ("error".to_owned(), error.clone()),
                        ("code".to_owned(), code.clone()),
                        ("kind".to_owned(), kind.clone()),
                    ]))),
                })
                .collect(),
        ),
    };
    Ok(result)
}

/// One result of `try`: `{ok: true, value}` or `{ok: false, error, code, kind}`.
enum Tried<'v> {
    Ok(&'v Val),
    Failed { error: &'v Val, code: &'v Val, kind: &'v Val },
}

/// The results of `try` in an array, with their indexes; anything else
/// in the array is reported.
fn tried<'v>(
    name: &str,
    value: &'v Val,
) -> Result<impl Iterator<Item = (usize, Tried<'v>)>, String> {
    let items = expect_array(name, value)?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let result = match (item.get("ok"), item.get("value"), item.get("error")) {
            (Some(Val::Bool(true)), Some(value), _) => Tried::Ok(value),
            (Some(Val::Bool(false)), _, Some(error)) => {
                let field = |name| item.get(name).unwrap_or(&Val::Null);
                Tried::Failed { error, code: field("code"), kind: field("kind") }
            }
            _ => {
                return Err(format!(
                    "`{name}` needs results of `try` ({{ok, value}} or {{ok: false, error}}), item {i} is {}",
                    describe(item)
                ));
            }
        };
        out.push((i, result));
    }
    Ok(out.into_iter())
}

fn wrong(name: &str, expected: &str, got: &Val) -> String {
    format!("`{name}` needs {expected}, got {}", describe(got))
}

fn expect_str<'v>(name: &str, value: &'v Val) -> Result<&'v str, String> {
    value.as_str().ok_or_else(|| wrong(name, "a string", value))
}

fn expect_array<'v>(name: &str, value: &'v Val) -> Result<&'v [Val], String> {
    value.as_array().ok_or_else(|| wrong(name, "an array", value))
}

fn expect_object<'v>(name: &str, value: &'v Val) -> Result<&'v Object, String> {
    value.as_object().ok_or_else(|| wrong(name, "an object", value))
}

fn expect_num(name: &str, value: &Val) -> Result<Num, String> {
    Num::of(value).ok_or_else(|| wrong(name, "a number", value))
}

/// `round(x)` to an integer, `round(x, digits)` to a float; halves go away
/// from zero.
fn round(args: &[Val]) -> Result<Val, String> {
    let x = expect_num("round", &args[0])?;
    let Some(digits) = args.get(1) else {
        return whole("round", &args[0], f64::round);
    };
    let digits = digits
        .as_i64()
        .filter(|d| (0..=15).contains(d))
        .ok_or_else(|| wrong("round", "digits from 0 to 15", digits))?;
    let scale = 10f64.powi(i32::try_from(digits).unwrap_or(0));
    Ok(Num::F((x.as_f64() * scale).round() / scale).to_value())
}

/// `floor`, `ceil`, `round`: integers stay, floats become integers when they fit.
#[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
fn whole(name: &str, value: &Val, f: fn(f64) -> f64) -> Result<Val, String> {
    match expect_num(name, value)? {
        Num::I(i) => Ok(Val::int(i)),
        Num::F(x) => {
            let y = f(x);
            if y.abs() < 9.0e15 { Ok(Val::int(y as i64)) } else { Ok(Num::F(y).to_value()) }
        }
    }
}

/// `min`/`max` of one array or of several arguments.
fn extreme(function: Function, args: &[Val]) -> Result<Val, String> {
    let name = function.name();
    let items: &[Val] = match args {
        [Val::Array(items)] => items,
        _ => args,
    };
    let mut best: Option<(Num, &Val)> = None;
    for item in items {
        let n = expect_num(name, item)?;
        let better = best.is_none_or(|(b, _)| {
            let ord = n.cmp_num(b);
            if function == Function::Min {
                ord.is_some_and(std::cmp::Ordering::is_lt)
            } else {
                ord.is_some_and(std::cmp::Ordering::is_gt)
            }
        });
        if better {
            best = Some((n, item));
        }
    }
    best.map(|(_, v)| v.clone()).ok_or_else(|| format!("`{name}` of an empty array"))
}

fn parse_number(s: &str) -> Option<Val> {
    if let Ok(i) = s.parse::<i64>() {
        return Some(Val::int(i));
    }
    s.parse::<f64>().ok().and_then(|f| Num::F(f).finite()).map(Num::to_value)
}

/// A count or an index as an integer value.
fn count(n: usize) -> Val {
    Val::int(i64::try_from(n).unwrap_or(i64::MAX))
}
