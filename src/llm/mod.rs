//! LLM serving's inputs: the prompts of a dataset (synthetic, JSON lines, ShareGPT) and the OpenAI body they fill,
//! as vLLM's `bench serve` and aiperf build them. The plan (`plan/llm.rs`) makes them a `run`'s rows and template.

pub mod body;
pub mod dataset;
pub mod tokenizer;
