"""The pack's functions are plain Python: after
`componentize-py -d wit -w prompt-pack-with-content bindings .` (the generated
wit_world module), `python -m unittest` runs them natively, before any build."""

import unittest

from app import Asking, Content, PromptProvider
from wit_world.exports.prompt_provider import Argument, ArgumentKind_Choice


class TestApp(unittest.TestCase):
    def test_the_templates_pass_the_checks_the_host_runs_at_load(self):
        self.assertIsNone(PromptProvider.check())

    def test_summaries_are_short_unless_asked(self):
        # Left out, the length is its default (the host fills it in before
        # it calls the pack; the library does too, for tests like this one).
        arguments = [Argument(name="text", value="Some text.")]
        reply = PromptProvider().get_prompt("summarize", arguments, None).value
        self.assertEqual([(message.role.name, message.content.value.text) for message in reply.messages],
                         [("USER", "Write a short summary of this text:\n\nSome text.")])

    def test_the_length_is_one_of_three(self):
        length = PromptProvider().list_prompts()[0].arguments[1]
        self.assertEqual(length.kind, ArgumentKind_Choice(["short", "medium", "long"]))
        self.assertEqual(length.default, "short")

    def test_a_text_left_out_is_asked_for_by_the_host(self):
        self.assertEqual(Asking().prompts_that_ask(), ["summarize"])
        self.assertTrue(PromptProvider().list_prompts()[0].arguments[0].required)

    def test_the_skill_is_carried_from_its_folder(self):
        files = Content().skill_files()
        self.assertEqual([file.path for file in files], ["summarizing/SKILL.md"])
        self.assertTrue(files[0].bytes.startswith(b"---\nname: summarizing\n"))


if __name__ == "__main__":
    unittest.main()
