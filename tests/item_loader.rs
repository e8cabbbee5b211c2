//! `ItemLoader` and its processors against itemloaders 1.5 (Scrapy 2.19's
//! `ItemLoader`), recorded by `tests/data/itemloaders/gen_itemloaders.py`
//! (`itemloaders.json`): each scenario's page, loader and operations run here, and
//! the recorded results and loaded item compared.

use serde_json::{Value, json};
use trawl::crawl::loader::{ItemLoader, Processor};
use trawl::crawl::{Request, Response};
use trawl::proto::Headers;

/// The Python one-liners of the recorder's `FUNCTIONS`.
fn function(name: &str) -> Processor {
    fn s(v: &Value) -> Result<&str, String> {
        v.as_str().ok_or_else(|| format!("not a string: {v}"))
    }
    match name {
        "strip" => Processor::function(|v| Ok(Some(json!(trawl::util::python_strip(s(&v)?))))),
        "upper" => Processor::function(|v| Ok(Some(json!(s(&v)?.to_uppercase())))),
        "lower" => Processor::function(|v| Ok(Some(json!(s(&v)?.to_lowercase())))),
        "int" => Processor::function(|v| {
            let t = trawl::util::python_strip(s(&v)?);
            t.parse::<i64>()
                .map(|n| Some(json!(n)))
                .map_err(|_| format!("ValueError: invalid literal for int(): {t:?}"))
        }),
        "float" => Processor::function(|v| {
            let t = trawl::util::python_strip(s(&v)?);
            t.parse::<f64>()
                .map(|n| Some(json!(n)))
                .map_err(|_| format!("ValueError: could not convert to float: {t:?}"))
        }),
        "none_if_empty" => Processor::function(|v| {
            let empty = matches!(&v, Value::String(x) if x.is_empty())
                || matches!(&v, Value::Array(a) if a.is_empty())
                || v.is_null();
            Ok((!empty).then_some(v))
        }),
        "split" => {
            Processor::function(|v| Ok(Some(json!(s(&v)?.split_whitespace().collect::<Vec<_>>()))))
        }
        "first" => Processor::function(|v| match &v {
            Value::Array(a) => a
                .first()
                .cloned()
                .map(Some)
                .ok_or_else(|| "IndexError: list index out of range".into()),
            Value::String(x) => x
                .chars()
                .next()
                .map(|c| Some(json!(c.to_string())))
                .ok_or_else(|| "IndexError: string index out of range".into()),
            other => Err(format!("TypeError: {other} is not subscriptable")),
        }),
        "len" => Processor::function(|v| match &v {
            Value::Array(a) => Ok(Some(json!(a.len()))),
            Value::String(x) => Ok(Some(json!(x.chars().count()))),
            other => Err(format!("TypeError: len() of {other}")),
        }),
        "double" => Processor::function(|v| match &v {
            Value::String(x) => Ok(Some(json!(x.repeat(2)))),
            Value::Number(n) => Ok(Some(json!(n.as_f64().unwrap_or(0.0) * 2.0))),
            other => Err(format!("TypeError: {other} * 2")),
        }),
        "drop_digits" => Processor::function(|v| {
            let t = s(&v)?;
            Ok((t.is_empty() || !t.chars().all(|c| c.is_numeric())).then_some(v))
        }),
        "unique" => Processor::function(|v| {
            let mut out: Vec<Value> = Vec::new();
            for x in trawl::crawl::loader::arg_to_iter(v) {
                if !out.contains(&x) {
                    out.push(x);
                }
            }
            Ok(Some(Value::Array(out)))
        }),
        "sorted" => Processor::function(|v| {
            let mut items: Vec<String> = trawl::crawl::loader::arg_to_iter(v)
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_owned)
                        .ok_or("TypeError: mixed".to_owned())
                })
                .collect::<Result<_, _>>()?;
            items.sort();
            Ok(Some(json!(items)))
        }),
        "times_n" => Processor::context_function(|v, ctx| {
            let n = ctx.get("n").and_then(Value::as_u64).unwrap_or(1) as usize;
            Ok(Some(json!(s(&v)?.repeat(n))))
        }),
        "title" => Processor::function(|v| {
            let mut out = String::new();
            let mut prev_cased = false;
            for c in s(&v)?.chars() {
                if prev_cased {
                    out.extend(c.to_lowercase());
                } else {
                    out.extend(c.to_uppercase());
                }
                prev_cased = c.is_lowercase() || c.is_uppercase();
            }
            Ok(Some(json!(out)))
        }),
        "strip_last" => Processor::function(|v| {
            let t = s(&v)?;
            let mut chars = t.chars();
            chars.next_back();
            Ok(Some(json!(chars.as_str())))
        }),
        "swapcase" => Processor::function(|v| {
            Ok(Some(json!(
                s(&v)?
                    .chars()
                    .flat_map(|c| {
                        if c.is_uppercase() {
                            c.to_lowercase().collect::<Vec<_>>()
                        } else {
                            c.to_uppercase().collect::<Vec<_>>()
                        }
                    })
                    .collect::<String>()
            )))
        }),
        "validate_sku" => Processor::function(|v| {
            let t = s(&v)?;
            Ok((!t.is_empty() && t.chars().all(|c| c.is_ascii_digit())).then_some(v))
        }),
        "to_name_map" => Processor::function(|v| Ok(Some(json!({ "name": v })))),
        "filter_world" => Processor::function(|v| Ok((v.as_str() != Some("world")).then_some(v))),
        "plus_one" => Processor::function(|v| match v.as_i64() {
            Some(n) => Ok(Some(json!(n + 1))),
            None => Err(format!(
                "TypeError: can only concatenate str (not \"int\") to {v}"
            )),
        }),
        other => panic!("no function {other}"),
    }
}

fn processor(spec: &Value) -> Processor {
    if let Some(name) = spec.as_str() {
        return function(name);
    }
    let (kind, arg) = spec
        .as_object()
        .and_then(|m| m.iter().next())
        .expect("a processor");
    let list = |a: &Value| {
        a.as_array()
            .expect("functions")
            .iter()
            .map(processor)
            .collect()
    };
    match kind.as_str() {
        "MapCompose" => Processor::MapCompose(list(arg)),
        "Compose" => Processor::Compose(list(arg)),
        "TakeFirst" => Processor::TakeFirst,
        "Identity" => Processor::Identity,
        "Join" => arg
            .as_str()
            .map_or_else(Processor::join, |s| Processor::Join(s.into())),
        "SelectJmes" => Processor::SelectJmes(arg.as_str().expect("expr").into()),
        "MapComposeWith" | "ComposeWith" => {
            let functions = list(&arg[0]);
            let defaults = arg[1].as_object().expect("defaults").clone();
            if kind == "MapComposeWith" {
                Processor::MapComposeWith(functions, defaults)
            } else {
                Processor::ComposeWith(functions, defaults)
            }
        }
        other => panic!("no processor {other}"),
    }
}

fn processors(v: &Value) -> Vec<Processor> {
    v.as_array()
        .expect("processors")
        .iter()
        .map(processor)
        .collect()
}

fn queries(v: &Value) -> Vec<&str> {
    match v {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().map(|q| q.as_str().expect("query")).collect(),
        other => panic!("query {other}"),
    }
}

fn run(loader: &mut ItemLoader<'_>, ops: &Value, results: &mut Vec<Value>) -> Result<(), String> {
    for op in ops.as_array().expect("ops") {
        let kind = op[0].as_str().expect("op");
        let e = |e: trawl::crawl::loader::LoaderError| e.to_string();
        match kind {
            "add_css" | "add_xpath" | "add_value" | "replace_css" | "replace_xpath"
            | "replace_value" => {
                let (procs, re) = (processors(&op[3]), op[4].as_str());
                let Some(field) = op[1].as_str() else {
                    if kind == "replace_value" {
                        loader.replace_value_map(op[2].clone(), &procs).map_err(e)?;
                    } else {
                        loader.add_value_map(op[2].clone(), &procs).map_err(e)?;
                    }
                    continue;
                };
                let arg = &op[2];
                match kind {
                    "add_css" => loader.add_css_with(field, &queries(arg), &procs, re),
                    "add_xpath" => loader.add_xpath_with(field, &queries(arg), &procs, re),
                    "add_value" => loader.add_value_with(field, arg.clone(), &procs, re),
                    "replace_css" => loader.replace_css_with(field, &queries(arg), &procs, re),
                    "replace_xpath" => loader.replace_xpath_with(field, &queries(arg), &procs, re),
                    _ => loader.replace_value_with(field, arg.clone(), &procs, re),
                }
                .map_err(e)?;
            }
            "get_css" | "get_xpath" | "get_value" => {
                let (procs, re) = (processors(&op[2]), op[3].as_str());
                results.push(
                    match kind {
                        "get_css" => loader.get_css_with(&queries(&op[1]), &procs, re),
                        "get_xpath" => loader.get_xpath_with(&queries(&op[1]), &procs, re),
                        _ => loader.get_value_with(op[1].clone(), &procs, re),
                    }
                    .map_err(e)?,
                );
            }
            "nested_css" | "nested_xpath" => {
                let q = op[1].as_str().expect("query");
                let mut nested = if kind == "nested_css" {
                    loader.nested_css(q)
                } else {
                    loader.nested_xpath(q)
                }
                .map_err(e)?;
                run(&mut nested, &op[2], results)?;
            }
            "get_collected_values" => {
                results.push(Value::Array(
                    loader.get_collected_values(op[1].as_str().expect("f")),
                ));
            }
            "get_output_value" => {
                results.push(
                    loader
                        .get_output_value(op[1].as_str().expect("f"))
                        .map_err(e)?,
                );
            }
            other => panic!("op {other}"),
        }
    }
    Ok(())
}

#[test]
fn item_loaders_match_itemloaders() {
    let data: Value = serde_json::from_str(include_str!("data/itemloaders/itemloaders.json"))
        .expect("itemloaders.json");
    let page = data["page"].as_str().expect("page");
    let mut headers = Headers::new();
    headers.append("Content-Type", "text/html; charset=utf-8");
    let r = Response::new(
        Request::get("http://example.com/p").expect("url"),
        200,
        headers,
        page.to_owned(),
    );
    let mut failures = Vec::new();
    let scenarios = data["scenarios"].as_array().expect("scenarios");
    for sc in scenarios {
        let name = sc["name"].as_str().expect("name");
        let spec = &sc["loader"];
        let mut loader = ItemLoader::new(&r);
        if let Some(item) = spec.get("item").and_then(Value::as_object) {
            loader = loader.with_item(trawl::crawl::Item(item.clone()));
        }
        if let Some(context) = spec.get("context").and_then(Value::as_object) {
            for (k, v) in context {
                loader = loader.with_context(k, v.clone());
            }
        }
        if let Some(p) = spec.get("default_input") {
            loader = loader.default_input_processor(processor(p));
        }
        if let Some(p) = spec.get("default_output") {
            loader = loader.default_output_processor(processor(p));
        }
        if let Some(fields) = spec.get("fields").and_then(Value::as_object) {
            for (field, procs) in fields {
                if let Some(p) = procs.get("in") {
                    loader = loader.field_in(field, processor(p));
                }
                if let Some(p) = procs.get("out") {
                    loader = loader.field_out(field, processor(p));
                }
            }
        }
        let mut results = Vec::new();
        let outcome = run(&mut loader, &sc["ops"], &mut results)
            .and_then(|()| loader.load_item().map_err(|e| e.to_string()));
        match (outcome, sc.get("error")) {
            (Ok(item), None) => {
                let item = Value::Object(item.0);
                if item != sc["item"] || Value::Array(results.clone()) != sc["results"] {
                    failures.push(format!(
                        "{name}: item {item}, results {results:?}\n  itemloaders: {} {}",
                        sc["item"], sc["results"]
                    ));
                }
            }
            (Err(_), Some(_)) => {}
            (Ok(item), Some(err)) => {
                failures.push(format!(
                    "{name}: itemloaders raises {err}, trawl loads {:?}",
                    item.0
                ));
            }
            (Err(e), None) => failures.push(format!("{name}: trawl fails: {e}")),
        }
    }
    assert!(scenarios.len() >= 35);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn processors_match_itemloaders_own_cases() {
    let data: Value = serde_json::from_str(include_str!("data/itemloaders/itemloaders.json"))
        .expect("itemloaders.json");
    let cases = data["processors"].as_array().expect("processors");
    let mut failures = Vec::new();
    for case in cases {
        let p = processor(&case["processor"]);
        let ours = p.call(case["input"].clone());
        let same = match (&ours, case.get("output")) {
            (Ok(v), Some(want)) => v == want,
            (Err(_), None) => true,
            _ => false,
        };
        if !same {
            failures.push(format!(
                "{} on {}: {ours:?}, itemloaders {}",
                case["processor"],
                case["input"],
                case.get("output").unwrap_or(&case["error"])
            ));
        }
    }
    assert!(cases.len() >= 20);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn items_load_into_serde_structs_and_start_from_an_item() {
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Product {
        name: String,
        price: f64,
        sku: String,
    }
    let html = r#"<h1> Widget </h1><span class="price">12.50</span>"#;
    let r = Response::new(
        Request::get("http://example.com/").expect("url"),
        200,
        Headers::new(),
        html,
    );
    let strip = Processor::function(|v| Ok(v.as_str().map(|s| json!(s.trim()))));
    let float = Processor::function(|v| {
        v.as_str()
            .and_then(|s| s.parse::<f64>().ok())
            .map(|f| Some(json!(f)))
            .ok_or_else(|| "ValueError".to_owned())
    });
    let mut item = trawl::crawl::Item::new();
    item.0.insert("sku".into(), json!("W-1"));
    let mut loader = ItemLoader::new(&r)
        .with_item(item)
        .default_input_processor(Processor::MapCompose(vec![strip]))
        .default_output_processor(Processor::TakeFirst)
        .field_in("price", Processor::MapCompose(vec![float]));
    loader.add_css("name", "h1::text").expect("css");
    loader.add_css("price", "span.price::text").expect("css");
    // The item's own field is a collected value: its output processor applies.
    assert_eq!(loader.get_collected_values("sku"), [json!("W-1")]);
    let product: Product = loader.load_into().expect("a product");
    assert_eq!(
        product,
        Product {
            name: "Widget".into(),
            price: 12.5,
            sku: "W-1".into()
        }
    );
    // A failing processor is an error naming the field, as itemloaders' ValueError.
    let err = loader.add_value("price", "n/a").expect_err("not a float");
    assert!(err.to_string().contains("field=\"price\""), "{err}");
}
