//! itemloaders' processors: [`Processor`] values that transform what a loader
//! collects — `MapCompose`, `Compose`, `TakeFirst`, `Identity`, `Join`, `SelectJmes`,
//! and plain functions of one value.
//!
//! Values are JSON values with Python's shapes: a list is an array, `None` is `null`;
//! `arg_to_iter` makes `null` no values, an array its items, anything else one value.

use std::fmt;
use std::rc::Rc;

use serde_json::{Map, Value};

/// A function of one value: `Ok(None)` is Python's `None` (dropped by `MapCompose`,
/// ending a `Compose`); `Err` a failure, reported with the field and value.
pub type Function = Rc<dyn Fn(Value) -> Result<Option<Value>, String>>;

/// A function of one value and the loader context (itemloaders passes
/// `loader_context` to a function that takes it): the loader's context, under the
/// keyword arguments of the `MapCompose` / `Compose` it runs in.
pub type ContextFunction = Rc<dyn Fn(Value, &Map<String, Value>) -> Result<Option<Value>, String>>;

/// A processor, as itemloaders' are used in loaders and as field processors.
#[derive(Clone)]
pub enum Processor {
    /// Applies each function to every value in turn, flattening lists and dropping
    /// `None`s (`MapCompose(f, g)`).
    MapCompose(Vec<Processor>),
    /// `MapCompose(f, g, key=value...)`: with default loader-context entries, which
    /// the loader's own context overrides.
    MapComposeWith(Vec<Processor>, Map<String, Value>),
    /// Applies the functions to the whole value in turn, stopping at `None`
    /// (`Compose(f, g)`).
    Compose(Vec<Processor>),
    /// `Compose(f, g, key=value...)`.
    ComposeWith(Vec<Processor>, Map<String, Value>),
    /// The first value that is neither `None` nor `""` (`TakeFirst()`).
    TakeFirst,
    /// The values unchanged (`Identity()`).
    Identity,
    /// The values joined with a separator (`Join(sep)`, `" "` by default); every
    /// value must be a string.
    Join(String),
    /// The value queried with JMESPath (`SelectJmes(expr)`).
    SelectJmes(String),
    /// A function of one value.
    Function(Function),
    /// A function of one value and the loader context.
    ContextFunction(ContextFunction),
}

impl fmt::Debug for Processor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MapCompose(p) | Self::MapComposeWith(p, _) => {
                f.debug_tuple("MapCompose").field(p).finish()
            }
            Self::Compose(p) | Self::ComposeWith(p, _) => {
                f.debug_tuple("Compose").field(p).finish()
            }
            Self::TakeFirst => f.write_str("TakeFirst"),
            Self::Identity => f.write_str("Identity"),
            Self::Join(s) => f.debug_tuple("Join").field(s).finish(),
            Self::SelectJmes(s) => f.debug_tuple("SelectJmes").field(s).finish(),
            Self::Function(_) | Self::ContextFunction(_) => f.write_str("Function"),
        }
    }
}

/// itemloaders' `arg_to_iter`: `null` → nothing, an array → its items, else one value.
pub fn arg_to_iter(value: Value) -> Vec<Value> {
    match value {
        Value::Null => Vec::new(),
        Value::Array(items) => items,
        other => vec![other],
    }
}

/// Python's truth value of a JSON value.
pub(crate) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

impl Processor {
    /// A function of one value as a processor.
    pub fn function(f: impl Fn(Value) -> Result<Option<Value>, String> + 'static) -> Self {
        Self::Function(Rc::new(f))
    }

    /// A function of one value and the loader context as a processor.
    pub fn context_function(
        f: impl Fn(Value, &Map<String, Value>) -> Result<Option<Value>, String> + 'static,
    ) -> Self {
        Self::ContextFunction(Rc::new(f))
    }

    /// `Join(" ")`.
    pub fn join() -> Self {
        Self::Join(" ".into())
    }

    /// Runs the processor on `value` (`null` is Python's `None`) with no loader
    /// context.
    ///
    /// # Errors
    ///
    /// A function failed, `Join` met a value that is not a string, or a JMESPath
    /// expression does not compile.
    pub fn call(&self, value: Value) -> Result<Value, String> {
        self.call_in(value, &Map::new())
    }

    /// Runs the processor on `value` with the loader context `context`.
    ///
    /// # Errors
    ///
    /// As [`call`](Self::call).
    pub fn call_in(&self, value: Value, context: &Map<String, Value>) -> Result<Value, String> {
        match self {
            Self::MapCompose(functions) => map_compose(functions, value, context),
            Self::MapComposeWith(functions, defaults) => {
                map_compose(functions, value, &merged(defaults, context))
            }
            Self::Compose(functions) => compose(functions, value, context),
            Self::ComposeWith(functions, defaults) => {
                compose(functions, value, &merged(defaults, context))
            }
            Self::TakeFirst => Ok(arg_to_iter(value)
                .into_iter()
                .find(|v| !v.is_null() && v.as_str() != Some(""))
                .unwrap_or(Value::Null)),
            Self::Identity => Ok(value),
            Self::Join(separator) => {
                let mut out = String::new();
                for (i, v) in arg_to_iter(value).iter().enumerate() {
                    let Some(s) = v.as_str() else {
                        return Err(format!(
                            "TypeError: sequence item {i}: expected str instance, got {v}"
                        ));
                    };
                    if i > 0 {
                        out.push_str(separator);
                    }
                    out.push_str(s);
                }
                Ok(Value::String(out))
            }
            Self::SelectJmes(expr) => {
                let compiled = jmespath::compile(expr).map_err(|e| e.to_string())?;
                let data =
                    jmespath::Variable::from_serializable(&value).map_err(|e| e.to_string())?;
                let found = compiled.search(data).map_err(|e| e.to_string())?;
                serde_json::to_value(&*found).map_err(|e| e.to_string())
            }
            Self::Function(f) => Ok(f(value)?.unwrap_or(Value::Null)),
            Self::ContextFunction(f) => Ok(f(value, context)?.unwrap_or(Value::Null)),
        }
    }
}

/// The defaults a processor was made with, under the loader's context.
fn merged(defaults: &Map<String, Value>, context: &Map<String, Value>) -> Map<String, Value> {
    let mut out = defaults.clone();
    out.extend(context.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

fn map_compose(
    functions: &[Processor],
    value: Value,
    context: &Map<String, Value>,
) -> Result<Value, String> {
    let mut values = arg_to_iter(value);
    for f in functions {
        let mut next = Vec::with_capacity(values.len());
        for v in values {
            next.extend(arg_to_iter(f.call_in(v, context)?));
        }
        values = next;
    }
    Ok(Value::Array(values))
}

fn compose(
    functions: &[Processor],
    value: Value,
    context: &Map<String, Value>,
) -> Result<Value, String> {
    let mut value = value;
    for f in functions {
        if value.is_null() {
            break;
        }
        value = f.call_in(value, context)?;
    }
    Ok(value)
}
