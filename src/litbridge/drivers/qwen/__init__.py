"""The Qwen Code driver (a Gemini CLI fork: its plug-ins and driver subclass the Gemini ones)."""

from litbridge.drivers.qwen.driver import QwenDriver

__all__ = ["QwenDriver"]
