"""End-to-end tests: subrosa inside the real Claude Code CLI (from npm), talking to a fake
Anthropic Messages API on 127.0.0.1. subrosa is driven through its command line only.

    fake_anthropic.py   FakeAnthropic: the scripted, logging Messages API (stdlib only)
    claude_code.py      installing Claude Code with npm; ClaudeProject: one offline project
    conftest.py         fixtures: claude_code (session), api, cc, repo_root
    test_*.py           the tests; `xfail(strict=True, reason="issue N: ...")` marks what is
                        known broken, so the fix flips the marker

See docs/testing.md.
"""
