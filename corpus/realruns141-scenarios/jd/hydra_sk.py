"""scikit-learn MLP training configured with Hydra."""
import hydra, numpy as np
from omegaconf import DictConfig
from sklearn.neural_network import MLPClassifier

@hydra.main(version_base=None, config_path="configs", config_name="train")   # config folder was renamed to conf/
def main(cfg: DictConfig):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(cfg.data.rows, 20)); y = (X[:, 0] > 0).astype(int)
    m = MLPClassifier(hidden_layer_sizes=tuple(cfg.model.hidden), max_iter=cfg.model.max_iter, verbose=True).fit(X, y)
    print("acc", m.score(X, y))

if __name__ == "__main__":
    main()
