"""A small OpenEnv environment for tunepack's GRPO (environment: {name: openenv, env: count_env:CountEnvironment}):
count one letter in a word. reset(word, letter) opens the episode; the one action answers with a count; the
reward is 1 for the right count, 0.5 one off, else 0, and the episode ends on the answer. Written in OpenEnv's own
types (Action, Observation, State, Environment); tunepack serves it with OpenEnv's HTTP server.

    python -c "import uvicorn, count_env as c; from openenv.core.env_server.http_server import create_fastapi_app; \
uvicorn.run(create_fastapi_app(c.CountEnvironment, c.CountAction, c.CountObservation, max_concurrent_envs=8))"
"""

from __future__ import annotations

import uuid

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class CountAction(Action):
    """Answer how many times the letter occurs in the word."""

    count: int = Field(description="How many times the letter occurs in the word.")


class CountObservation(Observation):
    message: str = Field("", description="What the environment says.")


class CountState(State):
    word: str = ""
    letter: str = ""
    answered: bool = False


class CountEnvironment(Environment[CountAction, CountObservation, CountState]):
    SUPPORTS_CONCURRENT_SESSIONS = True  # each session gets its own instance; nothing is shared

    def __init__(self) -> None:
        super().__init__()
        self._state = CountState(episode_id=str(uuid.uuid4()))

    def reset(self, seed=None, episode_id=None, word: str = "banana", letter: str = "a", **kwargs) -> CountObservation:
        self._state = CountState(episode_id=episode_id or str(uuid.uuid4()), word=word, letter=letter)
        return CountObservation(message=f"Count the letter '{letter}' in '{word}' and answer with the tool.",
                                reward=0.0, done=False)

    def step(self, action: CountAction, timeout_s=None, **kwargs) -> CountObservation:
        s = self._state
        s.step_count += 1
        if s.answered:
            return CountObservation(message="Already answered.", reward=0.0, done=True)
        s.answered = True
        truth = s.word.count(s.letter)
        off = abs(int(action.count) - truth)
        reward = 1.0 if off == 0 else 0.5 if off == 1 else 0.0
        return CountObservation(message="correct" if off == 0 else f"wrong: it is {truth}", reward=reward, done=True)

    @property
    def state(self) -> CountState:
        return self._state
