class CkptMeta:
    def __init__(self, path, step, best):
        self.path, self.step, self.best = path, step, best
    def __repr__(self):
        return f"CkptMeta({self.path!r}, step={self.step}, best={self.best})"
