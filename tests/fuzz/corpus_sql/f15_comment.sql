/* unclosed
