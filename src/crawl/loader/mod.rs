//! The `loader` room: Scrapy's `ItemLoader` (itemloaders') — values collected per
//! field from CSS, XPath and plain values, each through the field's input processor
//! as it is added and its output processor when the item is loaded — and the
//! processors ([`processors`]).
//!
//! Scrapy declares processors as class attributes (`name_in`, `default_output_processor`)
//! or `Field(input_processor=...)`; here they are registered on an [`ItemLoader`] with
//! [`ItemLoader::default_input_processor`], [`ItemLoader::field_in`] and their
//! output forms. Nested loaders ([`ItemLoader::nested_css`]) share the values of the
//! loader they come from, as in itemloaders.

pub mod processors;

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{Map, Value};

pub use processors::{Function, Processor, arg_to_iter};

use crate::crawl::base::item::Item;
use crate::crawl::http::response::Response;
use crate::crawl::http::selector::Selection;

/// A processor, query or extraction failed (itemloaders' `ValueError` text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoaderError(pub String);

impl std::fmt::Display for LoaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoaderError {}

/// The processors of a loader: defaults and per field.
#[derive(Clone, Default, Debug)]
struct Processors {
    default_in: Option<Processor>,
    default_out: Option<Processor>,
    fields_in: Vec<(String, Processor)>,
    fields_out: Vec<(String, Processor)>,
}

impl Processors {
    fn input(&self, field: &str) -> &Processor {
        self.fields_in
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, p)| p)
            .or(self.default_in.as_ref())
            .unwrap_or(&Processor::Identity)
    }

    fn output(&self, field: &str) -> &Processor {
        self.fields_out
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, p)| p)
            .or(self.default_out.as_ref())
            .unwrap_or(&Processor::Identity)
    }
}

/// What a loader and its nested loaders share: the item it started from and the
/// values collected per field, in the order fields were first added.
#[derive(Default, Debug)]
struct Shared {
    item: Map<String, Value>,
    values: Vec<(String, Vec<Value>)>,
}

impl Shared {
    fn values_mut(&mut self, field: &str) -> &mut Vec<Value> {
        let i = match self.values.iter().position(|(f, _)| f == field) {
            Some(i) => i,
            None => {
                self.values.push((field.to_owned(), Vec::new()));
                self.values.len() - 1
            }
        };
        &mut self.values[i].1
    }

    fn values(&self, field: &str) -> Vec<Value> {
        self.values
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }
}

/// Scrapy's `ItemLoader`.
///
/// # Examples
///
/// ```
/// use trawl::crawl::loader::{ItemLoader, Processor};
/// use trawl::crawl::{Request, Response};
/// use trawl::proto::Headers;
///
/// let html = r#"<div class="p"><h1> Widget </h1><span class="price">12.50</span></div>"#;
/// let r = Response::new(Request::get("http://example.com/").unwrap(), 200, Headers::new(), html);
/// let strip = Processor::function(|v| Ok(v.as_str().map(|s| s.trim().into())));
/// let mut loader = ItemLoader::new(&r)
///     .default_output_processor(Processor::TakeFirst)
///     .field_in("name", Processor::MapCompose(vec![strip]));
/// loader.add_css("name", "h1::text").unwrap();
/// loader.add_css("price", "span.price::text").unwrap();
/// let item = loader.load_item().unwrap();
/// assert_eq!(item.get("name").and_then(|v| v.as_str()), Some("Widget"));
/// assert_eq!(item.get("price").and_then(|v| v.as_str()), Some("12.50"));
/// ```
#[derive(Clone)]
pub struct ItemLoader<'a> {
    selector: Option<Selection<'a>>,
    processors: Rc<Processors>,
    shared: Rc<RefCell<Shared>>,
    /// The loader context (`ItemLoader(response, **context)`), given to
    /// [`Processor::ContextFunction`]s.
    context: Map<String, Value>,
}

impl std::fmt::Debug for ItemLoader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemLoader")
            .field("selector", &self.selector)
            .field("processors", &self.processors)
            .field("values", &self.shared.borrow().values)
            .finish()
    }
}

impl<'a> ItemLoader<'a> {
    /// A loader selecting in `response` (Scrapy's `ItemLoader(response=response)`).
    pub fn new(response: &'a Response) -> Self {
        Self::with_selector(Some(Selection::of_document(response.document())))
    }

    /// A loader selecting in `selection` (`ItemLoader(selector=sel)`), or none
    /// (`add_css` and `add_xpath` then fail, as itemloaders' raise).
    pub fn with_selector(selector: Option<Selection<'a>>) -> Self {
        Self {
            selector,
            processors: Rc::default(),
            shared: Rc::default(),
            context: Map::new(),
        }
    }

    /// Starts from `item`: its fields are collected values (`ItemLoader(item=item)`),
    /// and [`load_item`](Self::load_item) fills it.
    pub fn with_item(self, item: Item) -> Self {
        {
            let mut shared = self.shared.borrow_mut();
            for (k, v) in &item.0 {
                let values = arg_to_iter(v.clone());
                shared.values_mut(k).extend(values);
            }
            shared.item = item.0;
        }
        self
    }

    fn processors_mut(&mut self) -> &mut Processors {
        Rc::make_mut(&mut self.processors)
    }

    /// Sets an entry of the loader context (`ItemLoader(response, key=value)`,
    /// `loader.context[key] = value`).
    pub fn with_context(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.context.insert(key.to_owned(), value.into());
        self
    }

    /// The loader context.
    pub fn context(&self) -> &Map<String, Value> {
        &self.context
    }

    /// `default_input_processor` (default: `Identity`).
    pub fn default_input_processor(mut self, p: Processor) -> Self {
        self.processors_mut().default_in = Some(p);
        self
    }

    /// `default_output_processor` (default: `Identity`).
    pub fn default_output_processor(mut self, p: Processor) -> Self {
        self.processors_mut().default_out = Some(p);
        self
    }

    /// `<field>_in`: the input processor of one field.
    pub fn field_in(mut self, field: &str, p: Processor) -> Self {
        self.processors_mut().fields_in.push((field.to_owned(), p));
        self
    }

    /// `<field>_out`: the output processor of one field.
    pub fn field_out(mut self, field: &str, p: Processor) -> Self {
        self.processors_mut().fields_out.push((field.to_owned(), p));
        self
    }

    /// `get_value(value, *processors, re=re)`: `re` extracts from each value first
    /// (parsel's `extract_regex`), then the processors run in turn until one gives
    /// `None`.
    ///
    /// # Errors
    ///
    /// A processor failed, or `re` does not compile or meets a value that is not a
    /// string.
    pub fn get_value_with(
        &self,
        value: Value,
        processors: &[Processor],
        re: Option<&str>,
    ) -> Result<Value, LoaderError> {
        let mut value = value;
        if let Some(re) = re {
            let regex = regex::Regex::new(re).map_err(|e| LoaderError(e.to_string()))?;
            let mut out = Vec::new();
            for v in arg_to_iter(value) {
                let Some(s) = v.as_str() else {
                    return Err(LoaderError(format!(
                        "TypeError: re on a non-string value {v}"
                    )));
                };
                out.extend(
                    crate::crawl::http::selector::re::extract_regex(&regex, s, true)
                        .into_iter()
                        .map(Value::String),
                );
            }
            value = Value::Array(out);
        }
        for p in processors {
            if value.is_null() {
                break;
            }
            value = p.call_in(value.clone(), &self.context).map_err(|e| {
                LoaderError(format!(
                    "Error with processor {p:?} value={value} error='{e}'"
                ))
            })?;
        }
        Ok(value)
    }

    /// `get_value(value)` without processors.
    ///
    /// # Errors
    ///
    /// As [`get_value_with`](Self::get_value_with).
    pub fn get_value(&self, value: impl Into<Value>) -> Result<Value, LoaderError> {
        self.get_value_with(value.into(), &[], None)
    }

    /// `add_value(field, value, *processors, re=re)`.
    ///
    /// # Errors
    ///
    /// A processor (the field's input processor included) failed.
    pub fn add_value_with(
        &mut self,
        field: &str,
        value: Value,
        processors: &[Processor],
        re: Option<&str>,
    ) -> Result<&mut Self, LoaderError> {
        let value = self.get_value_with(value, processors, re)?;
        if !value.is_null() {
            self.add_processed(field, value)?;
        }
        Ok(self)
    }

    /// `add_value(field, value)`.
    ///
    /// # Errors
    ///
    /// The field's input processor failed.
    pub fn add_value(
        &mut self,
        field: &str,
        value: impl Into<Value>,
    ) -> Result<&mut Self, LoaderError> {
        self.add_value_with(field, value.into(), &[], None)
    }

    /// `add_value(None, {field: value, ...}, *processors)`: the value, once processed,
    /// is a map from fields to values, each added to its field.
    ///
    /// # Errors
    ///
    /// A processor failed, or the processed value is not a map.
    pub fn add_value_map(
        &mut self,
        value: Value,
        processors: &[Processor],
    ) -> Result<&mut Self, LoaderError> {
        match self.get_value_with(value, processors, None)? {
            Value::Null => {}
            Value::Object(map) => {
                for (field, v) in map {
                    self.add_processed(&field, v)?;
                }
            }
            other => {
                return Err(LoaderError(format!(
                    "AttributeError: add_value without a field needs a map, got {other}"
                )));
            }
        }
        Ok(self)
    }

    /// `replace_value(None, {field: value, ...}, *processors)`: each field's values
    /// replaced by its value in the processed map.
    ///
    /// # Errors
    ///
    /// A processor failed, or the processed value is not a map.
    pub fn replace_value_map(
        &mut self,
        value: Value,
        processors: &[Processor],
    ) -> Result<&mut Self, LoaderError> {
        match self.get_value_with(value, processors, None)? {
            Value::Null => {}
            Value::Object(map) => {
                for (field, v) in map {
                    self.shared.borrow_mut().values.retain(|(f, _)| *f != field);
                    self.add_processed(&field, v)?;
                }
            }
            other => {
                return Err(LoaderError(format!(
                    "AttributeError: replace_value without a field needs a map, got {other}"
                )));
            }
        }
        Ok(self)
    }

    /// `replace_value(field, value, *processors, re=re)`: the collected values of the
    /// field dropped, then [`add_value_with`](Self::add_value_with).
    ///
    /// # Errors
    ///
    /// As [`add_value_with`](Self::add_value_with).
    pub fn replace_value_with(
        &mut self,
        field: &str,
        value: Value,
        processors: &[Processor],
        re: Option<&str>,
    ) -> Result<&mut Self, LoaderError> {
        let value = self.get_value_with(value, processors, re)?;
        if value.is_null() {
            return Ok(self);
        }
        self.shared.borrow_mut().values.retain(|(f, _)| f != field);
        self.add_processed(field, value)?;
        Ok(self)
    }

    /// itemloaders' `_add_value`: the field's input processor on the values, and
    /// what it gives (when truthy) appended to the field's.
    fn add_processed(&mut self, field: &str, value: Value) -> Result<(), LoaderError> {
        let values = Value::Array(arg_to_iter(value));
        let p = self.processors.input(field);
        let processed = p.call_in(values.clone(), &self.context).map_err(|e| {
            LoaderError(format!(
                "Error with input processor {p:?}: field={field:?} value={values} error='{e}'"
            ))
        })?;
        if processors::truthy(&processed) {
            self.shared
                .borrow_mut()
                .values_mut(field)
                .extend(arg_to_iter(processed));
        }
        Ok(())
    }

    fn selected(&self, queries: &[&str], css: bool) -> Result<Value, LoaderError> {
        let selector = self.selector.as_ref().ok_or_else(|| {
            LoaderError("RuntimeError: the loader has no selector (no response given)".into())
        })?;
        let mut out = Vec::new();
        for q in queries {
            let found = if css {
                selector
                    .try_css(q)
                    .map_err(|e| LoaderError(e.to_string()))?
            } else {
                selector
                    .try_xpath(q, &[])
                    .map_err(|e| LoaderError(e.to_string()))?
            };
            out.extend(found.getall().into_iter().map(Value::String));
        }
        Ok(Value::Array(out))
    }

    /// `add_css(field, css, *processors, re=re)` with one query or several (their
    /// results concatenated).
    ///
    /// # Errors
    ///
    /// No selector, a malformed query, or a processor failed.
    pub fn add_css_with(
        &mut self,
        field: &str,
        queries: &[&str],
        processors: &[Processor],
        re: Option<&str>,
    ) -> Result<&mut Self, LoaderError> {
        let values = self.selected(queries, true)?;
        self.add_value_with(field, values, processors, re)
    }

    /// `add_css(field, css)`.
    ///
    /// # Errors
    ///
    /// As [`add_css_with`](Self::add_css_with).
    pub fn add_css(&mut self, field: &str, css: &str) -> Result<&mut Self, LoaderError> {
        self.add_css_with(field, &[css], &[], None)
    }

    /// `add_xpath(field, xpath, *processors, re=re)`.
    ///
    /// # Errors
    ///
    /// As [`add_css_with`](Self::add_css_with).
    pub fn add_xpath_with(
        &mut self,
        field: &str,
        queries: &[&str],
        processors: &[Processor],
        re: Option<&str>,
    ) -> Result<&mut Self, LoaderError> {
        let values = self.selected(queries, false)?;
        self.add_value_with(field, values, processors, re)
    }

    /// `add_xpath(field, xpath)`.
    ///
    /// # Errors
    ///
    /// As [`add_css_with`](Self::add_css_with).
    pub fn add_xpath(&mut self, field: &str, xpath: &str) -> Result<&mut Self, LoaderError> {
        self.add_xpath_with(field, &[xpath], &[], None)
    }

    /// `replace_css(field, css, *processors, re=re)`.
    ///
    /// # Errors
    ///
    /// As [`add_css_with`](Self::add_css_with).
    pub fn replace_css_with(
        &mut self,
        field: &str,
        queries: &[&str],
        processors: &[Processor],
        re: Option<&str>,
    ) -> Result<&mut Self, LoaderError> {
        let values = self.selected(queries, true)?;
        self.replace_value_with(field, values, processors, re)
    }

    /// `replace_xpath(field, xpath, *processors, re=re)`.
    ///
    /// # Errors
    ///
    /// As [`add_css_with`](Self::add_css_with).
    pub fn replace_xpath_with(
        &mut self,
        field: &str,
        queries: &[&str],
        processors: &[Processor],
        re: Option<&str>,
    ) -> Result<&mut Self, LoaderError> {
        let values = self.selected(queries, false)?;
        self.replace_value_with(field, values, processors, re)
    }

    /// `get_css(css, *processors, re=re)`: the processed values, not collected.
    ///
    /// # Errors
    ///
    /// As [`add_css_with`](Self::add_css_with).
    pub fn get_css_with(
        &self,
        queries: &[&str],
        processors: &[Processor],
        re: Option<&str>,
    ) -> Result<Value, LoaderError> {
        let values = self.selected(queries, true)?;
        self.get_value_with(values, processors, re)
    }

    /// `get_xpath(xpath, *processors, re=re)`.
    ///
    /// # Errors
    ///
    /// As [`add_css_with`](Self::add_css_with).
    pub fn get_xpath_with(
        &self,
        queries: &[&str],
        processors: &[Processor],
        re: Option<&str>,
    ) -> Result<Value, LoaderError> {
        let values = self.selected(queries, false)?;
        self.get_value_with(values, processors, re)
    }

    /// `nested_css(css)`: a loader selecting in what `css` selects here, sharing this
    /// loader's values and processors.
    ///
    /// # Errors
    ///
    /// No selector, or a malformed query.
    pub fn nested_css(&self, css: &str) -> Result<ItemLoader<'a>, LoaderError> {
        let selector = self.selector.as_ref().ok_or_else(|| {
            LoaderError("RuntimeError: the loader has no selector (no response given)".into())
        })?;
        let sub = selector
            .try_css(css)
            .map_err(|e| LoaderError(e.to_string()))?;
        Ok(self.nested(sub))
    }

    /// `nested_xpath(xpath)`.
    ///
    /// # Errors
    ///
    /// As [`nested_css`](Self::nested_css).
    pub fn nested_xpath(&self, xpath: &str) -> Result<ItemLoader<'a>, LoaderError> {
        let selector = self.selector.as_ref().ok_or_else(|| {
            LoaderError("RuntimeError: the loader has no selector (no response given)".into())
        })?;
        let sub = selector
            .try_xpath(xpath, &[])
            .map_err(|e| LoaderError(e.to_string()))?;
        Ok(self.nested(sub))
    }

    fn nested(&self, selector: Selection<'a>) -> ItemLoader<'a> {
        // As itemloaders' nested loaders: the values are shared, the context copied.
        ItemLoader {
            selector: Some(selector),
            processors: Rc::clone(&self.processors),
            shared: Rc::clone(&self.shared),
            context: self.context.clone(),
        }
    }

    /// `get_collected_values(field)`.
    pub fn get_collected_values(&self, field: &str) -> Vec<Value> {
        self.shared.borrow().values(field)
    }

    /// `get_output_value(field)`: the field's output processor on its values.
    ///
    /// # Errors
    ///
    /// The output processor failed.
    pub fn get_output_value(&self, field: &str) -> Result<Value, LoaderError> {
        let values = Value::Array(self.get_collected_values(field));
        let p = self.processors.output(field);
        p.call_in(values.clone(), &self.context).map_err(|e| {
            LoaderError(format!(
                "Error with output processor: field={field:?} value={values} error='{e}'"
            ))
        })
    }

    /// `load_item()`: every field's output value (those that are not `None`) set on
    /// the item the loader started from, in the order the fields were first added.
    ///
    /// # Errors
    ///
    /// An output processor failed.
    pub fn load_item(&self) -> Result<Item, LoaderError> {
        let fields: Vec<String> = self
            .shared
            .borrow()
            .values
            .iter()
            .map(|(f, _)| f.clone())
            .collect();
        let mut item = self.shared.borrow().item.clone();
        for field in fields {
            let value = self.get_output_value(&field)?;
            if !value.is_null() {
                item.insert(field, value);
            }
        }
        Ok(Item(item))
    }

    /// [`load_item`](Self::load_item) deserialised into a type of yours (a serde
    /// struct, as an `Item` class's fields).
    ///
    /// # Errors
    ///
    /// An output processor failed, or the values do not fit the type.
    pub fn load_into<T: serde::de::DeserializeOwned>(&self) -> Result<T, LoaderError> {
        let item = self.load_item()?;
        serde_json::from_value(Value::Object(item.0)).map_err(|e| LoaderError(e.to_string()))
    }
}
