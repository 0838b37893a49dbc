//! Embedding ignite in a Rust program: compile a `.ign` program, register
//! a native tool whose argument schema comes from a schemars type, run a
//! contract with inputs and read its outputs.
//!
//! `cargo run --example embed`

// An example program talks to its terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use igniter::llm::anthropic;
use igniter::prelude::*;
use serde_json::{Map, Value, json};

/// The program: a contract that calls the native tool directly (tools run
/// unguarded from contracts) and formats its answer.
const PROGRAM: &str = r#"
tool StockLevel {
  description "Units in stock for a SKU"
  param sku: string "Product SKU"
  param warehouse: string = "main" "Warehouse code"
  requires_capability inventory_read
  native "stock_level"
}

contract Availability {
  input sku: string
  compute stock = StockLevel(sku)
  compute answer = if stock.units > 0 then "{sku}: {stock.units} in {stock.warehouse}" else "{sku}: sold out"
  output answer
  output stock
}
"#;

/// The arguments of the native tool; schemars derives their JSON Schema.
#[derive(schemars::JsonSchema, serde::Deserialize)]
struct StockArgs {
    /// Product SKU.
    sku: String,
    /// Warehouse code.
    warehouse: String,
}

/// A tool implemented in Rust.
struct StockLevel;

impl NativeTool for StockLevel {
    fn name(&self) -> &str {
        "stock_level"
    }

    fn description(&self) -> &str {
        "Units in stock for a SKU"
    }

    fn parameters(&self) -> Value {
        schema_for::<StockArgs>()
    }

    fn call(&self, args: Value) -> Result<Value, String> {
        let args: StockArgs = serde_json::from_value(args).map_err(|e| e.to_string())?;
        let units = if args.sku.ends_with('1') { 12 } else { 0 };
        Ok(json!({"sku": args.sku, "warehouse": args.warehouse, "units": units}))
    }
}

/// Arguments of a native tool that no `.ign` file declares: its schema,
/// as models see it, is exactly what schemars derives.
#[derive(schemars::JsonSchema, serde::Deserialize)]
struct RestockArgs {
    /// Product SKU.
    sku: String,
    /// How many units to order.
    units: u32,
}

/// A native tool offered to models through the registry only.
struct Restock;

impl NativeTool for Restock {
    fn name(&self) -> &str {
        "restock"
    }

    fn description(&self) -> &str {
        "Order more units of a SKU"
    }

    fn parameters(&self) -> Value {
        schema_for::<RestockArgs>()
    }

    fn call(&self, args: Value) -> Result<Value, String> {
        let args: RestockArgs = serde_json::from_value(args).map_err(|e| e.to_string())?;
        Ok(json!({"ordered": args.units, "sku": args.sku}))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let compilation = compile_source("embed.ign", PROGRAM);
    let Some(program) = compilation.program else {
        eprint!("{}", compilation.diagnostics.render(&compilation.sources, false, 100));
        return Err("the program has errors".into());
    };

    let mut toolbox = Toolbox::new();
    toolbox.register_native(StockLevel);
    toolbox.register_native(Restock);

    // What a model would be offered: the schema of the registered tools,
    // filtered by the capabilities an agent holds.
    let registry = Registry::from_program(&program, &toolbox);
    let schemas = registry.schemas(anthropic::tool, Some(&["inventory_read".to_owned()]));
    println!("tool schemas: {}", serde_json::to_string_pretty(&schemas)?);

    let engine = Engine::new(program).with_toolbox(toolbox);
    let contract = engine.contract(Some("Availability"))?;
    for sku in ["SKU-001", "SKU-002"] {
        let inputs: Map<String, Value> = [("sku".to_owned(), json!(sku))].into_iter().collect();
        let output = engine.run(contract, &inputs, &RunOptions::default())?;
        println!("{}", Value::Object(output.outputs));
    }
    Ok(())
}
