"""The extraction prompts are seed 002 §3a verbatim with every placeholder filled."""

import re

import pytest

from extraction.texts.prompts import (
    MAP_SYSTEM_TEMPLATE,
    READ_GREP_SYSTEM_TEMPLATE,
    REDUCE_SYSTEM_TEMPLATE,
    PromptContext,
    map_messages,
    read_grep_messages,
    reduce_messages,
    render_map_system,
)
from tests.helpers import seed_text

CTX = PromptContext(
    tool_name="github_search",
    tool_args_json='{"q": "toolout", "per_page": 100}',
    extract="List repo names and star counts.",
    nonce="0123456789abcdef",
    doc_bytes=123456,
    doc_lines=789,
    doc_tokens=45678,
)

EXPECTED_MAP_SYSTEM = """You are an internal extraction agent. You must extract information from a document chunk.

SOURCE TOOL
- Name: github_search
- Arguments (verbatim JSON): {"q": "toolout", "per_page": 100}

DOCUMENT STATS
- Bytes: 123456
- Lines: 789
- Tokens (estimate): 45678

CHUNK INFO
- Index: 2 of 3
- Overlap: 10%

WHAT TO EXTRACT
List repo names and star counts.

OUTPUT FORMAT (required)
- Emit exactly one XML final-report wrapper:
  <ai-agent-0123456789abcdef-FINAL format="text"> ... </ai-agent-0123456789abcdef-FINAL>
- Put your extracted result inside the wrapper.
- If no relevant data exists, output:
  NO RELEVANT DATA FOUND
  <short description of what kind of information is available in this chunk>"""

EXPECTED_REDUCE_SYSTEM = """You are an internal extraction agent. You must synthesize multiple chunk extractions into one final answer.

SOURCE TOOL
- Name: github_search
- Arguments (verbatim JSON): {"q": "toolout", "per_page": 100}

WHAT TO EXTRACT
List repo names and star counts.

CHUNK OUTPUTS
--- chunk 1 of 2 ---
a: 10 stars

--- chunk 2 of 2 ---
NO RELEVANT DATA FOUND
only issues

OUTPUT FORMAT (required)
- Emit exactly one XML final-report wrapper:
  <ai-agent-0123456789abcdef-FINAL format="text"> ... </ai-agent-0123456789abcdef-FINAL>
- If no relevant data exists, output:
  NO RELEVANT DATA FOUND
  <short description of what kind of information is available across the chunks>"""  # noqa: E501 - seed 002 §3a, verbatim

EXPECTED_READ_GREP_SYSTEM = """You are an internal extraction agent. You can only use Read and Grep tools.

IMPORTANT: The handle is the filename.
Use the filename exactly as given when calling Read or Grep.

SOURCE TOOL
- Name: github_search
- Arguments (verbatim JSON): {"q": "toolout", "per_page": 100}
- Handle/filename: 3f0c9a2e-8d1b-4c7a-9e55-0b6f1d2c3a4b
- Root directory: /tmp/ai-agent-trx42

WHAT TO EXTRACT
List repo names and star counts.

OUTPUT FORMAT (required)
- Emit exactly one XML final-report wrapper:
  <ai-agent-0123456789abcdef-FINAL format="text"> ... </ai-agent-0123456789abcdef-FINAL>
- If no relevant data exists, output:
  NO RELEVANT DATA FOUND
  <short description of what kind of information is available in the file>"""


def test_map_messages_system_is_the_seed_prompt_filled() -> None:
    messages = map_messages(CTX, "repo a 10\nrepo b 3", chunk_index=2, chunk_total=3, overlap_percent=10)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == EXPECTED_MAP_SYSTEM


def test_map_user_message_carries_the_chunk_between_nonce_stamped_lines() -> None:
    user = map_messages(CTX, "repo a 10\nrepo b 3", chunk_index=2, chunk_total=3, overlap_percent=10)[1]["content"]
    assert user.endswith(
        "=== BEGIN DOCUMENT CHUNK 2 of 3 [0123456789abcdef] ===\n"
        "repo a 10\nrepo b 3\n"
        "=== END DOCUMENT CHUNK 2 of 3 [0123456789abcdef] ==="
    )
    assert user.startswith("Extract what WHAT TO EXTRACT asks for from document chunk 2 of 3 below.")


def test_reduce_messages_label_each_chunk_output() -> None:
    messages = reduce_messages(CTX, ["a: 10 stars\n", "NO RELEVANT DATA FOUND\nonly issues"])
    assert messages[0] == {"role": "system", "content": EXPECTED_REDUCE_SYSTEM}
    assert messages[1]["role"] == "user"
    assert messages[1]["content"].startswith("Synthesize the 2 chunk outputs in CHUNK OUTPUTS into one final answer")


def test_reduce_of_one_group_keeps_document_wide_numbering() -> None:
    system = reduce_messages(CTX, ["x", "y"], first_number=5, total=12)[0]["content"]
    assert "CHUNK OUTPUTS\n--- chunk 5 of 12 ---\nx\n\n--- chunk 6 of 12 ---\ny\n\nOUTPUT FORMAT (required)" in system


def test_read_grep_messages_name_the_handle_as_filename() -> None:
    messages = read_grep_messages(
        CTX, handle_filename="3f0c9a2e-8d1b-4c7a-9e55-0b6f1d2c3a4b", root="/tmp/ai-agent-trx42"
    )
    assert messages[0] == {"role": "system", "content": EXPECTED_READ_GREP_SYSTEM}
    assert messages[1] == {
        "role": "user",
        "content": 'Start now. Use Grep and Read on the file "3f0c9a2e-8d1b-4c7a-9e55-0b6f1d2c3a4b" to find what '
        "WHAT TO EXTRACT asks for, then emit your answer inside the final-report wrapper.",
    }


@pytest.mark.parametrize("template", [MAP_SYSTEM_TEMPLATE, REDUCE_SYSTEM_TEMPLATE, READ_GREP_SYSTEM_TEMPLATE])
def test_every_placeholder_gets_filled(template: str) -> None:
    rendered = [
        render_map_system(CTX, 1, 1, 10),
        reduce_messages(CTX, ["x"])[0]["content"],
        read_grep_messages(CTX, handle_filename="h", root="/r")[0]["content"],
    ]
    leftovers = [re.findall(r"<[A-Z_]+>", text) for text in rendered]
    assert leftovers == [[], [], []]


def test_values_that_look_like_placeholders_are_not_expanded() -> None:
    sneaky = CTX.model_copy(update={"tool_args_json": '{"q": "<EXTRACT_INSTRUCTIONS> <NONCE>"}'})
    system = render_map_system(sneaky, 1, 1, 0)
    assert '- Arguments (verbatim JSON): {"q": "<EXTRACT_INSTRUCTIONS> <NONCE>"}' in system
    assert system.count("List repo names and star counts.") == 1


def test_overlap_percent_keeps_fractions() -> None:
    assert "- Overlap: 12.5%" in render_map_system(CTX, 1, 2, 12.5)


def test_chunk_index_is_1_based_up_to_the_total() -> None:
    assert "- Index: 3 of 3" in render_map_system(CTX, 3, 3, 10)


@pytest.mark.parametrize(("index", "total"), [(0, 3), (4, 3), (1, 0)])
def test_chunk_index_out_of_range_is_refused(index: int, total: int) -> None:
    with pytest.raises(ValueError):
        render_map_system(CTX, index, total, 10)


def test_reduce_without_outputs_gives_the_bare_prompt_for_measuring() -> None:
    system = reduce_messages(CTX, [])[0]["content"]
    assert "CHUNK OUTPUTS\n\n\nOUTPUT FORMAT (required)" in system


def test_section_headers_appear_in_seed_order() -> None:
    system = render_map_system(CTX, 1, 1, 10)
    headers = ["SOURCE TOOL", "DOCUMENT STATS", "CHUNK INFO", "WHAT TO EXTRACT", "OUTPUT FORMAT (required)"]
    positions = [system.index(f"\n{header}\n") for header in headers]
    assert positions == sorted(positions)


def test_templates_are_the_seed_text_verbatim() -> None:
    seed = seed_text("002")
    section = seed[seed.index("### 3a) Prompts") : seed.index("### 4)")]
    blocks = re.findall(r"```\n(.*?)\n```", section, flags=re.DOTALL)
    assert blocks == [MAP_SYSTEM_TEMPLATE, REDUCE_SYSTEM_TEMPLATE, READ_GREP_SYSTEM_TEMPLATE]
